import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { AuditEvent } from '../../src/domain/audit/audit';
import { addDays, createTestContext, submitClaim, type TestContext } from '../harness';
import { csv, plate, postImport, postLookupBatch, validRow, waitForImport } from '../import-helpers';
import { companyWithPeople, PASSWORD, signedIn, totpCode, WebClient } from './web-client';

/**
 * What the audit trail says besides the acts (DECISIONS, "The audit trail cannot be rewritten"):
 * every download of personal data is a `data.exported` event naming what, durable before the
 * download is sent; a sign-in says how (a recovery code says so); and each event is chained, so
 * that a change by hand is found (the chain itself: test/integration/audit-verify.test.ts).
 */
const DAY = 86_400_000;
let clock = Date.now();
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ AUDIT_RETENTION_DAYS: '30' }, { now: () => clock });
});
afterAll(async () => ctx?.close());

type Listed = { data: (AuditEvent & Record<string, unknown>)[] };

describe('downloads of personal data', () => {
  it('each write one data.exported event naming what, before the file is sent; a refused one writes none', async () => {
    const c = await companyWithPeople(ctx, 'Downloads');
    const other = await ctx.newCompany('Not theirs');
    const member = await signedIn(ctx, c.member.email);
    const admin = await signedIn(ctx, c.admin.email);
    const api = (url: string, auth = c.auth) => ctx.app.inject({ method: 'GET', url, headers: auth });
    /** The company's data.exported events, newest first, as the API answers them. */
    const exported = async () => {
      const res = await api('/api/v1/audit-events?action=data.exported&limit=100');
      expect(res.statusCode).toBe(200);
      return res.json<Listed>().data;
    };

    // An import with a failed row, and a completed batch look-up.
    const imported = await postImport(ctx.app, c.auth, csv([validRow(), validRow({ first_name: '' })]), {
      headers: { prefer: 'respond-async' },
    });
    expect(imported.statusCode, imported.body).toBeLessThan(300);
    const importId = imported.json().data.id as string;
    expect(await waitForImport(ctx.app, c.auth, importId)).toMatchObject({ status: 'completed' });
    const p = plate();
    await submitClaim(ctx, other, { vehicle_registration: p, claim_date: addDays(ctx.deps.today(), -3) });
    const batch = await postLookupBatch(ctx.app, c.auth, `vehicle_registration\n${p}\n`);
    expect(batch.statusCode, batch.body).toBe(202);
    const batchId = batch.json().data.id as string;
    await expect
      .poll(async () => (await api(`/api/v1/lookups/batch/${batchId}`)).json().data.status, { timeout: 30_000 })
      .toBe('completed');

    const downloads: {
      get: () => Promise<{ statusCode: number }>;
      what: string;
      target: { type: string; id: string | null };
      actor: string;
    }[] = [
      {
        get: () => member.get('/claims/export.csv?status=open'),
        what: 'claims CSV',
        target: { type: 'claims', id: null },
        actor: c.member.email,
      },
      {
        get: () => member.get(`/imports/${importId}/failed-rows.csv`),
        what: 'failed rows',
        target: { type: 'import', id: importId },
        actor: c.member.email,
      },
      {
        get: () => api(`/api/v1/imports/${importId}/errors.csv`),
        what: 'failed rows',
        target: { type: 'import', id: importId },
        actor: 'test token',
      },
      {
        get: () => member.get(`/lookups/batch/${batchId}/results.csv`),
        what: 'batch results',
        target: { type: 'lookup_batch', id: batchId },
        actor: c.member.email,
      },
      {
        get: () => api(`/api/v1/lookups/batch/${batchId}/results.csv`),
        what: 'batch results',
        target: { type: 'lookup_batch', id: batchId },
        actor: 'test token',
      },
      {
        get: () => admin.get('/settings/audit/export.csv'),
        what: 'audit CSV',
        target: { type: 'audit_events', id: null },
        actor: c.admin.email,
      },
    ];
    for (const d of downloads) {
      const before = await exported();
      const res = await d.get();
      expect(res.statusCode, d.what).toBe(200);
      const after = await exported();
      expect(after.length, d.what).toBe(before.length + 1);
      expect(after[0], d.what).toMatchObject({
        action: 'data.exported',
        actor: { name: d.actor },
        target: { ...d.target, name: d.what },
        request_id: expect.any(String),
      });
      // The API's answer keeps its fields: no hash, no data.
      expect(Object.keys(after[0]!).sort()).toEqual(['action', 'actor', 'created_at', 'id', 'ip', 'request_id', 'target']);
    }
    // The event is durable before the first byte: the audit CSV holds its own download.
    const auditCsv = await admin.get('/settings/audit/export.csv');
    expect(auditCsv.body.replace(/^\uFEFF/u, '').split('\n')[1]).toMatch(
      /^[^,]+,data\.exported,person,[^,]+,[^,]+,audit_events,,audit CSV,/u,
    );
    // What the claims list was filtered by, kept with the event (not in the API's answer).
    const [claimsEvent] = await ctx.deps.repos.audit
      .list({ companyId: c.id, action: 'data.exported', limit: 100 })
      .then((l) => l.filter((e) => e.target?.name === 'claims CSV'));
    expect(claimsEvent!.data).toEqual({ what: 'claims CSV', filters: 'status=open' });

    // Another company's import or batch: 404, and nothing recorded.
    const before = await exported();
    expect((await api(`/api/v1/imports/${importId}/errors.csv`, other.auth)).statusCode).toBe(404);
    expect((await api(`/api/v1/lookups/batch/${batchId}/results.csv`, other.auth)).statusCode).toBe(404);
    expect(await exported()).toHaveLength(before.length);
    const othersEvents = await ctx.deps.repos.audit.list({ companyId: other.id, action: 'data.exported', limit: 10 });
    expect(othersEvents).toEqual([]);
  });
});

const keyOf = (body: string) => /id="totp-key"[^>]*value="([A-Z2-7 ]+)"/u.exec(body)?.[1]?.replaceAll(' ', '');
const codesOf = (body: string) => [...body.matchAll(/<li>([a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4})<\/li>/gu)].map((m) => m[1]!);

describe('sign-in events', () => {
  it('say how the person signed in: password, authenticator code, or a recovery code', async () => {
    const c = await companyWithPeople(ctx, 'Recovery');
    const web = new WebClient(ctx.app);
    await web.signIn(c.member.email, PASSWORD, clock);
    await web.get('/settings/security');
    const key = keyOf((await web.post('/settings/security/second-factor')).body)!;
    const codes = codesOf((await web.post('/settings/security/second-factor/confirm', { code: totpCode(key, clock) })).body);
    expect(codes).toHaveLength(10);
    const signIns = async () =>
      (await ctx.deps.repos.audit.list({ companyId: c.id, action: 'person.signed_in', limit: 10 })).map((e) => e.data);
    expect(await signIns()).toEqual([{ method: 'password' }]);

    async function codeStep(code: string) {
      const client = new WebClient(ctx.app);
      await client.get('/login');
      expect((await client.post('/login', { email: c.member.email, password: PASSWORD })).headers.location).toBe('/login/code');
      await client.get('/login/code');
      expect((await client.post('/login/code', { code })).statusCode).toBe(303);
    }
    await codeStep(codes[0]!);
    expect((await signIns())[0]).toEqual({ method: 'recovery code' });
    clock += 60_000;
    await codeStep(totpCode(key, clock));
    expect((await signIns())[0]).toEqual({ method: 'authenticator code' });
  });
});

describe('the chain', () => {
  it('holds through concurrent writers of one company and the retention purge', async () => {
    const c = await ctx.newCompany('Concurrent');
    await Promise.all(Array.from({ length: 12 }, (_, i) => ctx.deps.tokens.create(c.id, `parallel ${i}`)));
    const reports = await ctx.deps.audit.verify(c.id);
    expect(reports).toEqual([{ chain: c.id, companyId: c.id, events: 14, broken: null }]);
    const start = clock;
    try {
      clock = start + 31 * DAY;
      const r = await ctx.deps.registry.purge();
      expect(r.audit_events).toBeGreaterThanOrEqual(14);
      expect((await ctx.deps.audit.verify()).filter((report) => report.broken !== null)).toEqual([]);
    } finally {
      clock = start;
    }
  });
});
