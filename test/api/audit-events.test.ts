import { Readable } from 'node:stream';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { AuditEvent } from '../../src/domain/audit/audit';
import { csv, validRow } from '../import-helpers';
import { claimBody, createTestContext, type TestContext } from '../harness';
import { PASSWORD, signedIn, type WebClient } from '../web/web-client';

/**
 * The audit trail: each administrative act is an event with its actor, target, client address
 * and request id, written with the act; GET /api/v1/audit-events lists a company's, paged and
 * filtered; admins see it in Settings (with a CSV), the operator sees every company's; no event
 * holds a secret; old events go in the daily purge.
 */
const DAY = 86_400_000;
let clock = Date.now();
let ctx: TestContext;
let operator: WebClient;
let operatorEmail: string;
/** Every secret value the tests create: none may appear in any event. */
const secrets: string[] = [];
beforeAll(async () => {
  ctx = await createTestContext({ AUDIT_RETENTION_DAYS: '30' }, { now: () => clock });
  operatorEmail = `operator-${Math.random().toString(36).slice(2, 8)}@registry.example`;
  await ctx.deps.companies.createUser({ companyId: null, email: operatorEmail, password: PASSWORD, role: 'operator' });
  operator = await signedIn(ctx, operatorEmail);
});
afterAll(() => ctx.close());

const allEvents = () => ctx.deps.repos.audit.list({ companyId: null, limit: 10_000 });
const eventsOf = async (companyId: string) => (await ctx.deps.repos.audit.list({ companyId, limit: 1000 })).reverse();

/** A company made through the operator's pages, with an admin signed in. */
async function companyWithAdmin(name: string) {
  await operator.get('/operator');
  const made = await operator.post('/operator/companies', { name: `${name} ${Math.random().toString(36).slice(2, 8)}` });
  expect(made.statusCode).toBe(303);
  const companyId = /\/operator\/companies\/([0-9a-f-]{36})/u.exec(made.headers.location as string)![1]!;
  const adminEmail = `admin-${Math.random().toString(36).slice(2, 8)}@insurer.example`;
  const adminPassword = `Admin-Password-${Math.random().toString(36).slice(2, 10)}`;
  secrets.push(adminPassword);
  await operator.get(`/operator/companies/${companyId}`);
  const added = await operator.post(`/operator/companies/${companyId}/people`, {
    email: adminEmail,
    role: 'admin',
    password: adminPassword,
  });
  expect(added.statusCode).toBe(303);
  const admin = await signedIn(ctx, adminEmail, adminPassword);
  return { companyId, adminEmail, admin };
}

describe('audit events of each act', () => {
  it('record the actor, the target, the address and the request id, in order', async () => {
    const { companyId, adminEmail, admin } = await companyWithAdmin('Audited');
    const adminId = (await ctx.deps.companies.listUsers(companyId)).find((u) => u.email === adminEmail)!.id;

    await admin.get('/settings/tokens');
    const token = await admin.submit('/settings/tokens', { name: 'claims system', scopes: ['claims:read', 'logs:read'], expires: '30' });
    expect(token.statusCode).toBe(200);
    const tokenValue = /id="token-value"[^>]*value="(csk_[^"]+)"/u.exec(token.body)![1]!;
    secrets.push(tokenValue);
    const tokenId = (await ctx.deps.tokens.list(companyId)).find((t) => t.name === 'claims system')!.id;

    await admin.get('/settings/webhooks');
    const hook = await admin.submit('/settings/webhooks', { url: 'https://hooks.insurer.example/claims' });
    expect(hook.statusCode).toBe(200);
    secrets.push(/whsec_[A-Za-z0-9_-]+/u.exec(hook.body)![0]);
    const hookId = (await ctx.deps.webhooks.listEndpoints(companyId))[0]!.id;
    await admin.get(`/settings/webhooks/${hookId}/delete`);
    expect((await admin.post(`/settings/webhooks/${hookId}/delete`)).statusCode).toBe(303);

    const memberPassword = 'Member-Password-0123456789';
    secrets.push(memberPassword);
    await admin.get('/settings/people');
    expect(
      (await admin.post('/settings/people', { email: 'member@insurer.example', role: 'member', password: memberPassword })).statusCode,
    ).toBe(303);
    const memberId = (await ctx.deps.companies.listUsers(companyId)).find((u) => u.email === 'member@insurer.example')!.id;
    await admin.get('/settings/people');
    expect((await admin.post(`/settings/people/${memberId}/role`, { role: 'viewer' })).statusCode).toBe(303);
    await admin.get(`/settings/tokens/${tokenId}/revoke`);
    const revoke = await admin.post(`/settings/tokens/${tokenId}/revoke`);
    expect(revoke.statusCode).toBe(303);
    await admin.get(`/settings/people/${memberId}/remove`);
    expect((await admin.post(`/settings/people/${memberId}/remove`)).statusCode).toBe(303);

    // An import cancelled through the API, by a token.
    const api = await ctx.deps.tokens.create(companyId, 'importer', null, { scopes: ['imports', 'logs:read'] });
    secrets.push(api.token);
    const file = await ctx.deps.imports.receive(
      { companyId, companyName: 'x', tokenId: null, userId: null },
      { fileName: 'claims.csv', stream: Readable.from([Buffer.from(csv([validRow()]))]), truncated: () => false },
    );
    await ctx.deps.repos.imports.insert({
      id: file.importId,
      companyId,
      fileName: file.fileName,
      objectKey: file.objectKey,
      sizeBytes: file.size,
      rowsTotal: file.dataRows,
    });
    const cancel = await ctx.app.inject({
      method: 'POST',
      url: `/api/v1/imports/${file.importId}/cancel`,
      headers: { authorization: `Bearer ${api.token}` },
    });
    expect(cancel.statusCode).toBe(200);

    await operator.get(`/operator/companies/${companyId}`);
    expect((await operator.post(`/operator/companies/${companyId}/suspend`)).statusCode).toBe(303);
    expect((await operator.post(`/operator/companies/${companyId}/resume`)).statusCode).toBe(303);

    // The administrative acts (sign-ins are events too: test/web/sign-in-audit.test.ts).
    const events = (await eventsOf(companyId)).filter((e) => !e.action.startsWith('person.sign'));
    const person = { type: 'person', id: adminId, name: adminEmail };
    const op = { type: 'operator', id: expect.any(String), name: operatorEmail };
    const cli = { type: 'operator', id: null, name: 'command line' };
    const ip = '127.0.0.1';
    expect(events.map((e) => [e.action, e.actor, e.target, e.ip])).toEqual([
      ['company.created', op, { type: 'company', id: companyId, name: expect.any(String) }, ip],
      ['person.created', op, { type: 'person', id: adminId, name: adminEmail }, ip],
      ['token.created', person, { type: 'token', id: tokenId, name: 'claims system' }, ip],
      ['webhook.created', person, { type: 'webhook', id: hookId, name: 'https://hooks.insurer.example/claims' }, ip],
      ['webhook.deleted', person, { type: 'webhook', id: hookId, name: 'https://hooks.insurer.example/claims' }, ip],
      ['person.created', person, { type: 'person', id: memberId, name: 'member@insurer.example' }, ip],
      ['person.role_changed', person, { type: 'person', id: memberId, name: 'member@insurer.example' }, ip],
      ['token.revoked', person, { type: 'token', id: tokenId, name: 'claims system' }, ip],
      ['person.removed', person, { type: 'person', id: memberId, name: 'member@insurer.example' }, ip],
      ['token.created', cli, { type: 'token', id: api.id, name: 'importer' }, null],
      ['import.cancelled', { type: 'token', id: api.id, name: 'importer' }, { type: 'import', id: file.importId, name: 'claims.csv' }, ip],
      ['company.suspended', op, { type: 'company', id: companyId, name: expect.any(String) }, ip],
      ['company.resumed', op, { type: 'company', id: companyId, name: expect.any(String) }, ip],
    ]);
    expect(events.find((e) => e.action === 'token.revoked')!.request_id).toBe(revoke.headers['x-request-id']);
    expect(events.find((e) => e.action === 'import.cancelled')!.request_id).toBe(cancel.headers['x-request-id']);
    expect(events.find((e) => e.action === 'token.created' && e.actor.type === 'operator')!.request_id).toBeNull();
  });

  it('record the operator’s purge and subject export, with no document number', async () => {
    const company = await ctx.newCompany('Subject');
    const body = claimBody();
    const doc = (body.client as { id_documents: { number: string }[] }).id_documents[0]!.number;
    secrets.push(doc);
    expect((await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: body })).statusCode).toBe(201);
    const client = body.client as { date_of_birth: string };
    const found = await ctx.deps.registry.subjectExport({ dateOfBirth: client.date_of_birth, idType: 'passport', idNumber: doc });
    expect(found.person).not.toBeNull();
    await ctx.deps.registry.purge();
    const [purged] = await ctx.deps.repos.audit.list({ companyId: null, action: 'data.purged', limit: 1 });
    expect(purged).toMatchObject({ company_id: null, actor: { type: 'system', id: null }, target: { type: 'retention' } });
    const [exported] = await ctx.deps.repos.audit.list({ companyId: null, action: 'subject.exported', limit: 1 });
    expect(exported).toMatchObject({
      actor: { type: 'operator', id: null, name: 'command line' },
      target: { type: 'subject', id: found.person!.id },
    });
  });

  it('never hold a token value, a password, a webhook secret or a document number', async () => {
    expect(secrets.length).toBeGreaterThanOrEqual(6);
    const text = JSON.stringify(await allEvents());
    for (const secret of secrets) expect(text).not.toContain(secret);
    const raw = JSON.stringify(await ctx.deps.db.query('SELECT * FROM audit_events'));
    for (const secret of secrets) expect(raw).not.toContain(secret);
  });
});

describe('GET /api/v1/audit-events', () => {
  it("lists the caller's company's events newest first, paged like the claims list, with ?action=", async () => {
    const { companyId, admin } = await companyWithAdmin('Listed');
    for (const name of ['one', 'two', 'three']) {
      await admin.get('/settings/tokens');
      expect((await admin.post('/settings/tokens', { name, scopes: ['search'], expires: '7' })).statusCode).toBe(303);
    }
    const reader = await ctx.deps.tokens.create(companyId, 'auditor', null, { scopes: ['logs:read'] });
    const auth = { authorization: `Bearer ${reader.token}` };
    const first = await ctx.app.inject({ method: 'GET', url: '/api/v1/audit-events?limit=2', headers: auth });
    expect(first.statusCode).toBe(200);
    const page1 = first.json<{ data: AuditEvent[]; meta: { next_cursor: string | null } }>();
    expect(page1.data.map((e) => [e.action, e.target?.name])).toEqual([
      ['token.created', 'auditor'],
      ['token.created', 'three'],
    ]);
    expect(Object.keys(page1.data[0]!).sort()).toEqual(['action', 'actor', 'created_at', 'id', 'ip', 'request_id', 'target']);
    const second = await ctx.app.inject({
      method: 'GET',
      url: `/api/v1/audit-events?limit=2&cursor=${page1.meta.next_cursor}`,
      headers: auth,
    });
    expect(second.json<{ data: AuditEvent[] }>().data.map((e) => e.target?.name)).toEqual(['two', 'one']);
    const filtered = await ctx.app.inject({ method: 'GET', url: '/api/v1/audit-events?action=person.created', headers: auth });
    expect(filtered.json<{ data: AuditEvent[] }>().data.map((e) => e.action)).toEqual(['person.created']);
    const bad = await ctx.app.inject({ method: 'GET', url: '/api/v1/audit-events?action=nope', headers: auth });
    expect(bad.statusCode).toBe(422);
    const badCursor = await ctx.app.inject({ method: 'GET', url: '/api/v1/audit-events?cursor=nope', headers: auth });
    expect(badCursor.statusCode).toBe(422);
    // Another company's events are not listed.
    const other = await ctx.newCompany('Other');
    const mine = await ctx.app.inject({ method: 'GET', url: '/api/v1/audit-events?limit=100', headers: auth });
    expect(JSON.stringify(mine.json())).not.toContain(other.id);
  });
});

describe('the audit log pages', () => {
  it('shows admins their company’s log with a CSV export, and the operator every company’s', async () => {
    const { companyId, admin } = await companyWithAdmin('Pages');
    await admin.get('/settings/tokens');
    await admin.post('/settings/tokens', { name: '=HYPERLINK("x")', scopes: ['search'], expires: '7' });
    const page = await admin.get('/settings/audit');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('token.created');
    expect(page.body).toContain('href="/settings/audit/export.csv"');
    const filtered = await admin.get('/settings/audit?action=person.created');
    expect(filtered.body).not.toContain('<code>token.created</code>');
    const exported = await admin.get('/settings/audit/export.csv');
    expect(exported.statusCode).toBe(200);
    expect(exported.headers['content-type']).toMatch(/^text\/csv/u);
    const lines = exported.body
      .replace(/^\uFEFF/u, '')
      .trim()
      .split('\n');
    expect(lines[0]).toBe('created_at,action,actor_type,actor_id,actor_name,target_type,target_id,target_name,ip,request_id');
    // company.created, person.created, person.signed_in, token.created, and this download's own
    // data.exported (recorded before the file's first byte), first: newest first.
    expect(lines.length).toBe(6);
    expect(lines[1]).toMatch(/^[^,]+,data\.exported,/u);
    expect(exported.body).toContain(`'=HYPERLINK`);

    const everyone = await operator.get('/operator/audit');
    expect(everyone.statusCode).toBe(200);
    expect(everyone.body).toContain('company.created');
    const one = await operator.get(`/operator/audit?company=${companyId}&action=token.created`);
    expect(one.body).toContain('=HYPERLINK(&quot;x&quot;)');
    expect(one.body).not.toContain('<code>person.created</code>');
  });
});

describe('retention', () => {
  it('removes events older than AUDIT_RETENTION_DAYS in the purge, keeping younger ones', async () => {
    const { companyId } = await companyWithAdmin('Retention');
    const before = (await eventsOf(companyId)).length;
    expect(before).toBeGreaterThan(0);
    const start = clock;
    try {
      clock = start + 29 * DAY;
      await ctx.deps.registry.purge();
      expect((await eventsOf(companyId)).length).toBe(before);
      clock = start + 31 * DAY;
      const r = await ctx.deps.registry.purge();
      expect(r.audit_events).toBeGreaterThanOrEqual(before);
      expect(await eventsOf(companyId)).toEqual([]);
    } finally {
      clock = start;
    }
  });
});
