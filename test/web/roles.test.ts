import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { csv, futureDate, postImport, validRow } from '../import-helpers';
import { claimBody, companyPrincipal, createTestContext, type TestContext } from '../harness';
import { companyWithPeople, PASSWORD, signedIn, WebClient } from './web-client';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx.close());

const firstPassword = (html: string) => /id="first-password"[^>]*value="([^"]+)"/u.exec(html)?.[1];

describe('company admin and member', () => {
  it('lets a member see the people of their company but not add or remove anyone', async () => {
    const c = await companyWithPeople(ctx);
    const member = await signedIn(ctx, c.member.email);
    const page = await member.get('/settings/people');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(c.admin.email);
    expect(page.body).not.toContain('Add a person');
    expect(page.body).not.toContain('/remove');
    const add = await member.post('/settings/people', { email: 'x@member.example', role: 'admin', password: 'a-long-enough-password' });
    expect(add.statusCode).toBe(403);
    expect((await member.get(`/settings/people/${c.admin.id}/remove`)).statusCode).toBe(403);
    await member.get('/settings/people');
    expect((await member.post(`/settings/people/${c.admin.id}/remove`)).statusCode).toBe(403);
    expect((await ctx.deps.companies.listUsers(c.id)).length).toBe(2);
  });

  it('lets an admin add a person with a generated first password, shown once, that signs in', async () => {
    const c = await companyWithPeople(ctx);
    const admin = await signedIn(ctx, c.admin.email);
    await admin.get('/settings/people');
    const added = await admin.post('/settings/people', { email: 'New.Person@Example.com', role: 'member', password: '' });
    expect(added.statusCode).toBe(303);
    const res = await admin.get(added.headers.location as string);
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toContain('It will not be shown again');
    const password = firstPassword(res.body)!;
    expect(password.length).toBeGreaterThanOrEqual(20);
    expect((await admin.get('/settings/people')).body).not.toContain(password);
    const person = new WebClient(ctx.app);
    await person.signIn('new.person@example.com', password);
    expect((await person.get('/claims')).statusCode).toBe(200);
  });

  it('shows field errors for a bad email or a short password, never echoing the password', async () => {
    const c = await companyWithPeople(ctx);
    const admin = await signedIn(ctx, c.admin.email);
    await admin.get('/settings/people');
    const bad = await admin.post('/settings/people', { email: 'not-an-email', role: 'member', password: '' });
    expect(bad.statusCode).toBe(422);
    expect(bad.body).toMatch(/id="person-email-error">The email field must be a valid email address\./u);
    const short = await admin.post('/settings/people', { email: 'short@pw.example', role: 'member', password: 'Short-1' });
    expect(short.statusCode).toBe(422);
    expect(short.body).toContain('id="person-password-error"');
    expect(short.body).not.toContain('Short-1');
    const taken = await admin.post('/settings/people', { email: c.member.email, role: 'member', password: '' });
    expect(taken.statusCode).toBe(422);
    expect(taken.body).toContain('A person with this email already exists.');
  });

  it('lets an admin remove a person after confirming, and not remove themselves', async () => {
    const c = await companyWithPeople(ctx);
    const admin = await signedIn(ctx, c.admin.email);
    const confirm = await admin.get(`/settings/people/${c.member.id}/remove`);
    expect(confirm.statusCode).toBe(200);
    expect(confirm.body).toContain(`Remove ${c.member.email}?`);
    const res = await admin.post(`/settings/people/${c.member.id}/remove`);
    expect(res.headers.location).toBe('/settings/people?removed=1');
    expect((await ctx.deps.companies.listUsers(c.id)).map((u) => u.id)).toEqual([c.admin.id]);
    expect((await admin.get(`/settings/people/${c.admin.id}/remove`)).statusCode).toBe(403);
    await admin.get('/settings/people');
    expect((await admin.post(`/settings/people/${c.admin.id}/remove`)).statusCode).toBe(403);
  });

  it('keeps company people out of the operator area', async () => {
    const c = await companyWithPeople(ctx);
    const admin = await signedIn(ctx, c.admin.email);
    expect((await admin.get('/operator')).statusCode).toBe(403);
    expect((await admin.get(`/operator/companies/${c.id}`)).statusCode).toBe(403);
    await admin.get('/');
    expect((await admin.post('/operator/companies', { name: 'Sneaky Co' })).statusCode).toBe(403);
  });
});

describe('operator', () => {
  it('creates a company and its first admin, who can then sign in; company pages are not theirs', async () => {
    const email = `operator-${Math.random().toString(36).slice(2, 8)}@registry.example`;
    await ctx.deps.companies.createUser({ companyId: null, email, password: PASSWORD, role: 'operator' });
    const op = new WebClient(ctx.app);
    // The operator sets up the second factor operators must have, then lands on their own area.
    const signIn = await op.signIn(email, PASSWORD);
    expect(signIn.body).toContain('href="/operator"');
    expect((await op.get('/')).headers.location).toBe('/operator');
    expect((await op.get('/claims')).statusCode).toBe(403);
    expect((await op.get('/settings/tokens')).statusCode).toBe(403);

    const list = await op.get('/operator');
    expect(list.statusCode).toBe(200);
    // No REDIS_URL here: imports run in the server, and the page says so instead of linking Bull Board.
    expect(list.body).toContain('Imports run inside the server (REDIS_URL is not set): the counts are its runner');
    expect(list.body).not.toContain('href="/admin/queues"');
    const created = await op.post('/operator/companies', { name: 'Gamma Insurance' });
    expect(created.statusCode).toBe(303);
    const companyUrl = created.headers.location!.split('?')[0]!;
    const page = await op.get(created.headers.location!);
    expect(page.body).toContain('Add the first admin');
    const added = await op.post(`${companyUrl}/people`, { email: 'first.admin@gamma.example', role: 'admin', password: '' });
    expect(added.statusCode).toBe(303);
    const password = firstPassword((await op.get(added.headers.location!)).body)!;
    const admin = new WebClient(ctx.app);
    await admin.signIn('first.admin@gamma.example', password);
    const people = await admin.get('/settings/people');
    expect(people.body).toContain('Add a person');
    expect(people.body).toContain('Gamma Insurance');

    await op.get('/operator');
    const duplicate = await op.post('/operator/companies', { name: 'gamma insurance' });
    expect(duplicate.statusCode).toBe(422);
    expect(duplicate.body).toContain('already exists');
  });

  it('shows every company with its counts, the recent imports of all companies and the queue', async () => {
    const email = `operator-${Math.random().toString(36).slice(2, 8)}@registry.example`;
    await ctx.deps.companies.createUser({ companyId: null, email, password: PASSWORD, role: 'operator' });
    const a = await companyWithPeople(ctx, 'Counted');
    const p = companyPrincipal(a);
    await ctx.deps.claims.submit(p, claimBody());
    await ctx.deps.claims.submit(p, claimBody());
    await ctx.deps.tokens.create(a.id, 'second token');
    const rows = [validRow(), validRow({ claim_date: futureDate() })];
    await postImport(ctx.app, a.auth, csv(rows), { fileName: 'operator-sees-this.csv' });
    const op = await signedIn(ctx, email);
    const page = await op.get('/operator');
    // Claims 3 (2 + 1 imported), imports 1, live tokens 2, people 2.
    expect(page.body).toContain(
      `<a href="/operator/companies/${a.id}">${a.name}</a></td><td class="num" data-label="Claims">3</td><td class="num" data-label="Imports">1</td><td class="num" data-label="Live tokens">2</td><td class="num" data-label="People">2</td>`,
    );
    const row = new RegExp(
      `<td data-label="Company">${a.name}</td>\\s*<td class="wide" data-label="File">operator-sees-this.csv</td>[\\s\\S]*?</tr>`,
      'u',
    ).exec(page.body)![0];
    expect(row).toContain('Completed');
    expect(row).toContain('<td class="num" data-label="Rows">2</td>');
    expect(row).toContain('<td class="num" data-label="Failed rows">1</td>');
    expect(row).toMatch(/data-label="Took">[\d.,]+ s</u);
    expect(page.body).toMatch(/<span class="stat-value">0<\/span> <span class="stat-label">waiting<\/span>/u);
    expect((await ctx.deps.queueHealth()).mode).toBe('in-process');
  });

  it('gets 404 for a person of another company under a company page', async () => {
    const email = `operator-${Math.random().toString(36).slice(2, 8)}@registry.example`;
    await ctx.deps.companies.createUser({ companyId: null, email, password: PASSWORD, role: 'operator' });
    const a = await companyWithPeople(ctx);
    const b = await companyWithPeople(ctx);
    const op = await signedIn(ctx, email);
    expect((await op.get(`/operator/companies/${a.id}/people/${b.member.id}/remove`)).statusCode).toBe(404);
    await op.get('/operator');
    expect((await op.post(`/operator/companies/${a.id}/people/${b.member.id}/remove`)).statusCode).toBe(404);
    expect((await ctx.deps.companies.listUsers(b.id)).length).toBe(2);
  });
});
