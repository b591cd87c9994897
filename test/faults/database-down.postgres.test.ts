import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { claimBody, createTestContext, type Company, type TestContext } from '../harness';
import { startTcpProxy } from '../tcp-proxy';
import { companyWithPeople, signedIn } from '../web/web-client';

/**
 * A lost or refused database connection is a fault of the service's surroundings, not a bug: the
 * API answers 503 with Retry-After (like a missing import queue), never 500 "Server error.". The
 * fault is real: the server talks to PostgreSQL through a TCP proxy that the test cuts.
 */
describe('the database connection is lost or refused', () => {
  let ctx: TestContext;
  let proxy: Awaited<ReturnType<typeof startTcpProxy>>;
  let company: Company;

  beforeAll(async () => {
    const target = new URL(process.env.TEST_DATABASE_URL!);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    const viaProxy = new URL(target);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    ctx = await createTestContext({ DATABASE_URL: viaProxy.toString(), DB_POOL_SIZE: '2' });
    company = await ctx.newCompany('Faults');
  });
  afterAll(async () => {
    proxy?.restore();
    await ctx?.close();
    await proxy?.close();
  });

  const expect503 = (res: { statusCode: number; headers: Record<string, unknown>; json(): unknown; body: string }) => {
    expect(res.statusCode, res.body).toBe(503);
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    const body = res.json() as { message: string };
    expect(body.message).toMatch(/database/i);
    expect(res.body).not.toMatch(/ECONN|CONNECTION_|at .*\.ts/u);
  };

  it('answers 503 with Retry-After while the database refuses connections, and 201 again once it is back', async () => {
    const ok = await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: claimBody() });
    expect(ok.statusCode).toBe(201);

    proxy.cut(); // open connections reset, new ones refused
    try {
      expect503(await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: claimBody() }));
      expect503(await ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: company.auth }));
    } finally {
      proxy.restore();
    }
    const back = await ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: company.auth });
    expect(back.statusCode).toBe(200);
  });

  it('answers 503 when the connection is terminated in the middle of a request', async () => {
    // Requests in flight while the connection drops: each ends as 503, none as 500 or a hang.
    const pending = Array.from({ length: 6 }, () =>
      ctx.app.inject({
        method: 'POST',
        url: '/api/v1/claims/search-by-plate',
        headers: company.auth,
        payload: { vehicle_registration: 'AB123C' },
      }),
    );
    proxy.cut();
    let results;
    try {
      results = await Promise.all(pending);
    } finally {
      proxy.restore();
    }
    for (const res of results) {
      if (res.statusCode !== 200) expect503(res);
    }
    // At least one of them hit the fault (the cut came before any could finish its round trips).
    expect(results.some((r) => r.statusCode === 503)).toBe(true);
  });
  it('shows a signed-in dashboard user a 503 page that says to try again, not a server error', async () => {
    const people = await companyWithPeople(ctx, 'Faults web');
    const web = await signedIn(ctx, people.member.email);
    expect((await web.get('/claims')).statusCode).toBe(200);

    proxy.cut();
    let page;
    try {
      page = await web.get('/claims');
    } finally {
      proxy.restore();
    }
    expect(page.statusCode, page.body).toBe(503);
    expect(Number(page.headers['retry-after'])).toBeGreaterThan(0);
    expect(page.headers['content-type']).toMatch(/^text\/html/u);
    expect(page.body).toContain('cannot reach its database');
    expect(page.body).not.toContain('Something went wrong');
    expect(page.body).not.toMatch(/ECONN|CONNECTION_|at .*\.ts/u);
    // Back to normal once the database answers again (the driver reconnects with a back-off).
    await expect.poll(async () => (await web.get('/claims')).statusCode, { timeout: 45_000, interval: 500 }).toBe(200);
  }, 90_000);
});
