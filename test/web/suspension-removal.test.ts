import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, type TestContext } from '../harness';
import { companyWithPeople, PASSWORD, signedIn, WebClient } from './web-client';

/**
 * Suspension of a company by the operator, and the removal of a person: what becomes of their
 * sign-in, their sessions and the tokens and webhooks they made.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

const claims = (token: string) => ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: { authorization: `Bearer ${token}` } });

describe('a suspended company', () => {
  it('gets 403 company_suspended on its tokens at once, its people are signed out and told why at sign-in; resumed, all works again', async () => {
    const c = await companyWithPeople(ctx, 'Suspend');
    const member = await signedIn(ctx, c.member.email);
    expect((await claims(c.token)).statusCode).toBe(200);
    await ctx.deps.companies.suspend(c.id);

    const refused = await claims(c.token);
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ code: 'company_suspended' });
    // Signed out: the next page asks to sign in.
    expect((await member.get('/claims')).headers.location).toMatch(/^\/login/u);
    const again = new WebClient(ctx.app);
    await again.get('/login');
    const signIn = await again.post('/login', { email: c.member.email, password: PASSWORD });
    expect(signIn.statusCode).toBe(403);
    expect(signIn.body).toContain('is suspended by its operator');
    // Its claims stay: another company still finds nothing missing (the company's row is untouched).
    expect((await ctx.deps.companies.getCompany(c.id)).suspended_at).not.toBeNull();

    await ctx.deps.companies.resume(c.id);
    expect((await claims(c.token)).statusCode).toBe(200);
    const back = new WebClient(ctx.app);
    await back.signIn(c.member.email, PASSWORD);
    expect((await back.get('/claims')).statusCode).toBe(200);
  });

  it('is suspended and resumed from the operator pages, which show its state', async () => {
    const c = await companyWithPeople(ctx, 'Operator suspends');
    const email = `op-${Math.random().toString(36).slice(2, 8)}@registry.example`;
    await ctx.deps.companies.createUser({ companyId: null, email, password: PASSWORD, role: 'operator' });
    const op = await signedIn(ctx, email);
    const page = await op.get(`/operator/companies/${c.id}`);
    expect(page.body).toContain('Suspend company');
    const res = await op.post(`/operator/companies/${c.id}/suspend`);
    expect(res.headers.location).toBe(`/operator/companies/${c.id}?suspended=1`);
    const shown = await op.get(`/operator/companies/${c.id}?suspended=1`);
    expect(shown.body).toContain('data-suspended');
    expect(shown.body).toContain('Resume company');
    expect((await claims(c.token)).statusCode).toBe(403);
    await op.post(`/operator/companies/${c.id}/resume`);
    expect((await claims(c.token)).statusCode).toBe(200);
  });
});

describe('removing a person', () => {
  it('lists the tokens and webhooks they made, and revokes their tokens', async () => {
    const c = await companyWithPeople(ctx, 'Removal');
    const made = await ctx.deps.tokens.create(c.id, 'member pipeline', c.member.id);
    await ctx.deps.webhooks.createEndpoint(c.id, 'https://hooks.example.com/member', { userId: c.member.id });
    const admin = await signedIn(ctx, c.admin.email);
    const confirm = await admin.get(`/settings/people/${c.member.id}/remove`);
    expect(confirm.body).toMatch(/data-made="tokens">\s*<li>member pipeline<\/li>/u);
    expect(confirm.body).toMatch(/data-made="webhooks">\s*<li>https:\/\/hooks.example.com\/member<\/li>/u);
    expect(confirm.body).toContain('name="keep_tokens"');
    expect((await claims(made.token)).statusCode).toBe(200);
    const removed = await admin.post(`/settings/people/${c.member.id}/remove`);
    expect(removed.headers.location).toBe('/settings/people?removed=1&revoked=1');
    expect((await claims(made.token)).statusCode).toBe(401);
    // The token revoked with the person is on record as revoked, by the admin who removed them.
    const revokedEvents = await ctx.deps.repos.audit.list({ companyId: c.id, action: 'token.revoked', limit: 10 });
    expect(revokedEvents).toEqual([
      expect.objectContaining({
        actor: expect.objectContaining({ type: 'person', id: c.admin.id }),
        target: { type: 'token', id: made.id, name: 'member pipeline' },
      }),
    ]);
    // The company's other token goes on; the webhook stays, now the admin's.
    expect((await claims(c.token)).statusCode).toBe(200);
    expect(await ctx.deps.companies.madeBy(c.admin.id, c.id)).toMatchObject({ webhooks: [{ url: 'https://hooks.example.com/member' }] });
  });

  it('keeps their tokens working when the admin says so; the admin becomes their creator', async () => {
    const c = await companyWithPeople(ctx, 'Keep');
    const made = await ctx.deps.tokens.create(c.id, 'kept pipeline', c.member.id);
    const admin = await signedIn(ctx, c.admin.email);
    await admin.get(`/settings/people/${c.member.id}/remove`);
    const removed = await admin.post(`/settings/people/${c.member.id}/remove`, { keep_tokens: '1' });
    expect(removed.headers.location).toBe('/settings/people?removed=1');
    expect((await claims(made.token)).statusCode).toBe(200);
    expect((await ctx.deps.companies.madeBy(c.admin.id, c.id)).tokens.map((t) => t.name)).toEqual(['kept pipeline']);
  });
});

describe('roles', () => {
  it('are set when a person is added, changed by an admin (not their own), and a viewer is read-only', async () => {
    const c = await companyWithPeople(ctx, 'Roles');
    const admin = await signedIn(ctx, c.admin.email);
    await admin.get('/settings/people');
    expect((await admin.post('/settings/people', { email: 'viewer@roles.example', role: 'viewer', password: PASSWORD })).statusCode).toBe(
      303,
    );
    const viewer = await signedIn(ctx, 'viewer@roles.example');
    expect((await viewer.get('/claims')).statusCode).toBe(200);
    const entry = await viewer.get('/claims/new');
    expect(entry.statusCode).toBe(403);
    expect(entry.body).toContain('The member role is needed');

    await admin.get('/settings/people');
    const id = (await ctx.deps.companies.listUsers(c.id)).find((u) => u.email === 'viewer@roles.example')!.id;
    expect((await admin.post(`/settings/people/${id}/role`, { role: 'member' })).statusCode).toBe(303);
    expect((await viewer.get('/claims/new')).statusCode).toBe(200);
    await admin.get('/settings/people');
    expect((await admin.post(`/settings/people/${c.admin.id}/role`, { role: 'viewer' })).statusCode).toBe(403);
    await admin.get('/settings/people');
    expect((await admin.post(`/settings/people/${id}/role`, { role: 'owner' })).statusCode).toBe(422);
  });
});
