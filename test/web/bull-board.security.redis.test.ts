import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, type TestContext } from '../harness';
import { companyWithPeople, PASSWORD, signedIn, WebClient } from './web-client';

// Bull Board is mounted when imports run on BullMQ (REDIS_URL), which needs PostgreSQL.
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ REDIS_URL: process.env.TEST_REDIS_URL!, QUEUE_PREFIX: `test-${randomBytes(4).toString('hex')}` });
});
afterAll(async () => ctx?.close());

describe('Bull Board at /admin/queues behind the operator sign-in', () => {
  it('sends a signed-out browser to the sign-in page and back, and answers 401 to anything else', async () => {
    const page = await ctx.app.inject({ method: 'GET', url: '/admin/queues', headers: { accept: 'text/html' } });
    expect(page.statusCode).toBe(303);
    expect(page.headers.location).toBe('/login?next=%2Fadmin%2Fqueues');
    const api = await ctx.app.inject({ method: 'GET', url: '/admin/queues/api/queues', headers: { accept: 'application/json' } });
    expect(api.statusCode).toBe(401);
    const script = await ctx.app.inject({ method: 'GET', url: '/admin/queues' });
    expect(script.statusCode).toBe(401);
  });

  it('lets a signed-in operator in, with the same sign-in as the dashboard', async () => {
    const email = `operator-${randomBytes(3).toString('hex')}@registry.example`;
    await ctx.deps.companies.createUser({ companyId: null, email, password: PASSWORD, role: 'operator' });
    const op = await signedIn(ctx, email);
    const companies = await op.get('/operator');
    expect(companies.body).toContain('href="/admin/queues"');
    const page = await op.get('/admin/queues');
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/u);
    const api = await op.get('/admin/queues/api/queues', { accept: 'application/json' });
    expect(api.statusCode).toBe(200);
    // A state-changing call made by another site is refused even with the operator's cookie.
    const cross = await ctx.app.inject({
      method: 'PUT',
      url: '/admin/queues/api/queues/claims-import/pause',
      headers: { cookie: `claims_session=${op.cookies.get('claims_session')}`, origin: 'https://evil.example' },
    });
    expect(cross.statusCode).toBe(403);
    // Signing out of the dashboard signs out of Bull Board too: the same cookie no longer works.
    const cookie = op.cookies.get('claims_session')!;
    await op.get('/operator');
    expect((await op.post('/logout')).statusCode).toBe(303);
    const after = await ctx.app.inject({
      method: 'GET',
      url: '/admin/queues/api/queues',
      headers: { accept: 'application/json', cookie: `claims_session=${cookie}` },
    });
    expect(after.statusCode).toBe(401);
  });

  it('keeps out an operator without a second factor: one half-way through setting it up, or one whose factor was removed', async () => {
    const email = `operator-${randomBytes(3).toString('hex')}@registry.example`;
    await ctx.deps.companies.createUser({ companyId: null, email, password: PASSWORD, role: 'operator' });
    // The password was right, the set-up is due: Bull Board is not open yet.
    const half = new WebClient(ctx.app);
    await half.get('/login');
    expect((await half.post('/login', { email, password: PASSWORD })).headers.location).toBe('/login/enrol');
    expect((await half.get('/admin/queues')).statusCode).toBe(303);
    expect((await half.get('/admin/queues/api/queues', { accept: 'application/json' })).statusCode).toBe(401);
    // Signed in with a second factor, then the factor is gone (a session from before it was required).
    const op = await signedIn(ctx, email);
    expect((await op.get('/admin/queues/api/queues', { accept: 'application/json' })).statusCode).toBe(200);
    await ctx.deps.db.query('UPDATE users SET totp_enabled_at = NULL WHERE lower(email) = lower($1)', [email]);
    expect((await op.get('/admin/queues/api/queues', { accept: 'application/json' })).statusCode).toBe(401);
    expect((await op.get('/operator')).headers.location).toBe('/login?next=%2Foperator');
  });

  it('keeps company people out: a browser is sent to the dashboard, which explains', async () => {
    const c = await companyWithPeople(ctx);
    const admin = await signedIn(ctx, c.admin.email);
    const page = await admin.get('/admin/queues');
    expect(page.statusCode).toBe(303);
    expect(page.headers.location).toBe('/operator');
    expect((await admin.get('/operator')).statusCode).toBe(403);
    expect((await admin.get('/admin/queues/api/queues', { accept: 'application/json' })).statusCode).toBe(401);
  });

  it("records the operator's changes (pause, resume) as audit events with the operator as actor", async () => {
    const email = `operator-${randomBytes(3).toString('hex')}@registry.example`;
    await ctx.deps.companies.createUser({ companyId: null, email, password: PASSWORD, role: 'operator' });
    const op = await signedIn(ctx, email);
    const cookie = `claims_session=${op.cookies.get('claims_session')}`;
    const queues = (await op.get('/admin/queues/api/queues', { accept: 'application/json' })).json<{ queues: { name: string }[] }>();
    const name = queues.queues[0]!.name;
    for (const act of ['pause', 'resume']) {
      const res = await ctx.app.inject({
        method: 'PUT',
        url: `/admin/queues/api/queues/${encodeURIComponent(name)}/${act}`,
        headers: { cookie },
      });
      expect(res.statusCode, res.body).toBeLessThan(400);
    }
    const events = await ctx.deps.repos.audit.list({ companyId: null, limit: 10 });
    // The queue acts (the operator's sign-in and second factor are events of their own).
    const mine = events.filter((e) => e.actor.name === email && e.action.startsWith('queue.'));
    expect(mine.map((e) => [e.action, e.target])).toEqual([
      ['queue.resumed', { type: 'queue', id: name, name: null }],
      ['queue.paused', { type: 'queue', id: name, name: null }],
    ]);
    expect(mine[0]).toMatchObject({ actor: { type: 'operator', name: email }, ip: '127.0.0.1', request_id: expect.any(String) });
    // Reads are not audit events.
    await op.get('/admin/queues/api/queues', { accept: 'application/json' });
    const after = await ctx.deps.repos.audit.list({ companyId: null, limit: 10 });
    expect(after.filter((e) => e.actor.name === email && e.action.startsWith('queue.'))).toHaveLength(2);
  });
});
