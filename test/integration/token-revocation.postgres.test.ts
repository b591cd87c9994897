import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, TEST_HASH_KEY, TEST_LIMITS, type TestContext } from '../harness';
import { answering, freePort, kill, ROOT, startScript, until, type Child } from '../processes';
import { companyWithPeople, httpApp, PASSWORD, WebClient } from '../web/web-client';

/**
 * Revocation everywhere, with real processes: two API servers on one PostgreSQL, each caching the
 * tokens it verified. A token revoked through one server's dashboard is refused by that server at
 * once and by the other within a second; a token revoked by a third process (the service itself,
 * as the admin command line does) is refused by both within a second. Needs PostgreSQL.
 */

type Server = { child: Child; base: string };

describe('a revoked token, with two server processes on one database', () => {
  let ctx: TestContext;
  let schema: string;
  const servers: Server[] = [];
  const logFile = path.join(ROOT, 'test-results', `token-revocation-${randomBytes(4).toString('hex')}.log`);

  async function startServer(): Promise<Server> {
    const port = await freePort();
    const child = startScript(
      'start',
      {
        DATABASE_URL: process.env.TEST_DATABASE_URL!,
        DB_SEARCH_PATH: schema,
        DB_POOL_SIZE: '2',
        DOCUMENT_HASH_KEY: TEST_HASH_KEY,
        SESSION_SECRET: 'test-session-secret-0123456789abcdef0123',
        DATA_DIR: ctx.config.dataDir,
        HOST: '127.0.0.1',
        PORT: String(port),
        LOG_LEVEL: 'warn',
        // Revoked tokens are failed authentications: the limits stay on, out of this test's reach.
        ...TEST_LIMITS,
      },
      { logFile },
    );
    const server = { child, base: `http://127.0.0.1:${port}` };
    servers.push(server);
    await answering(child, server.base);
    return server;
  }

  const call = (server: Server, token: string) =>
    fetch(`${server.base}/api/v1/claims`, { headers: { authorization: `Bearer ${token}`, accept: 'application/json' } }).then(
      (r) => r.status,
    );

  /**
   * Asks `server` every 20 ms until a request sent a full second after `revokedAt` has been
   * answered; returns the statuses with the time each request was sent.
   */
  async function watch(server: Server, token: string, revokedAt: number) {
    const seen: { sentAt: number; status: number }[] = [];
    for (;;) {
      const sentAt = Date.now();
      seen.push({ sentAt, status: await call(server, token) });
      if (sentAt >= revokedAt + 1000) return seen;
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** After the first refusal (401, or `status`), only refusals; and every request sent from one second after the act on is one. */
  function expectRefusedWithinOneSecond(seen: { sentAt: number; status: number }[], revokedAt: number, status = 401) {
    const first401 = seen.findIndex((s) => s.status === status);
    expect(first401, JSON.stringify(seen)).toBeGreaterThanOrEqual(0);
    expect(
      seen.slice(first401).every((s) => s.status === status),
      JSON.stringify(seen),
    ).toBe(true);
    const late = seen.filter((s) => s.sentAt >= revokedAt + 1000);
    expect(late.length).toBeGreaterThan(0);
    expect(late.every((s) => s.status === status)).toBe(true);
  }

  beforeAll(async () => {
    ctx = await createTestContext();
    schema = (await ctx.deps.db.query<{ s: string }>('SELECT current_schema() AS s'))[0]!.s;
    await Promise.all([startServer(), startServer()]);
  }, 120_000);

  afterAll(async () => {
    for (const { child } of servers) await kill(child, 'SIGTERM');
    await ctx?.close();
    fs.rmSync(logFile, { force: true });
  });

  it("revoked in one server's dashboard: that server refuses it at once, the other within a second", async () => {
    const [a, b] = servers as [Server, Server];
    const company = await companyWithPeople(ctx, 'Revocation');
    // Both servers verify the token, so both now hold it in memory.
    for (let i = 0; i < 3; i++) {
      expect(await call(a, company.token)).toBe(200);
      expect(await call(b, company.token)).toBe(200);
    }

    const web = new WebClient(httpApp(a.base));
    await web.signIn(company.admin.email, PASSWORD);
    const [row] = (await ctx.deps.tokens.list(company.id)).filter((t) => t.name === 'test token');
    await web.get(`/settings/tokens/${row!.id}/revoke`);
    const revoked = await web.post(`/settings/tokens/${row!.id}/revoke`);
    expect(revoked.statusCode).toBe(303);
    const revokedAt = Date.now();

    expect(await call(a, company.token)).toBe(401);
    expectRefusedWithinOneSecond(await watch(b, company.token, revokedAt), revokedAt);
    expect(await call(a, company.token)).toBe(401);
  }, 60_000);

  it('revoked by another process (the service, as the admin command line uses it): both servers refuse it within a second', async () => {
    const [a, b] = servers as [Server, Server];
    const company = await ctx.newCompany('Revocation');
    for (let i = 0; i < 3; i++) {
      expect(await call(a, company.token)).toBe(200);
      expect(await call(b, company.token)).toBe(200);
    }
    const [row] = await ctx.deps.tokens.list(company.id);
    await ctx.deps.tokens.revoke(row!.id, company.id);
    const revokedAt = Date.now();
    const [seenA, seenB] = await Promise.all([watch(a, company.token, revokedAt), watch(b, company.token, revokedAt)]);
    expectRefusedWithinOneSecond(seenA, revokedAt);
    expectRefusedWithinOneSecond(seenB, revokedAt);
  }, 60_000);

  it('a company suspended by another process (the admin command line): both servers answer 403 within a second; resumed, 200 again', async () => {
    const [a, b] = servers as [Server, Server];
    const company = await ctx.newCompany('Suspended');
    for (let i = 0; i < 3; i++) {
      expect(await call(a, company.token)).toBe(200);
      expect(await call(b, company.token)).toBe(200);
    }
    await ctx.deps.companies.suspend(company.id);
    const suspendedAt = Date.now();
    const [seenA, seenB] = await Promise.all([watch(a, company.token, suspendedAt), watch(b, company.token, suspendedAt)]);
    expectRefusedWithinOneSecond(seenA, suspendedAt, 403);
    expectRefusedWithinOneSecond(seenB, suspendedAt, 403);
    await ctx.deps.companies.resume(company.id);
    await until(
      'both servers to accept the token again',
      async () => (await call(a, company.token)) === 200 && (await call(b, company.token)) === 200,
      5_000,
    );
  }, 60_000);

  it("a removed person's tokens: revoked with the removal, refused by both servers within a second", async () => {
    const [a, b] = servers as [Server, Server];
    const company = await companyWithPeople(ctx, 'Removal');
    const { token } = await ctx.deps.tokens.create(company.id, 'made by the member', company.member.id);
    for (let i = 0; i < 3; i++) {
      expect(await call(a, token)).toBe(200);
      expect(await call(b, token)).toBe(200);
    }
    await ctx.deps.companies.removeUser(company.member.id, company.id, { heirId: company.admin.id });
    const removedAt = Date.now();
    const [seenA, seenB] = await Promise.all([watch(a, token, removedAt), watch(b, token, removedAt)]);
    expectRefusedWithinOneSecond(seenA, removedAt);
    expectRefusedWithinOneSecond(seenB, removedAt);
    // The company's own token (made by nobody in particular) goes on working.
    expect(await call(a, company.token)).toBe(200);
  }, 60_000);

  it('records the last use of a token used only through the servers', async () => {
    const [a] = servers as [Server, Server];
    const company = await ctx.newCompany('Last use');
    expect((await ctx.deps.tokens.list(company.id))[0]!.last_used_at).toBeNull();
    expect(await call(a, company.token)).toBe(200);
    // Written in a batch a few seconds later, not by the request itself.
    await until('the last use to be written', async () => (await ctx.deps.tokens.list(company.id))[0]!.last_used_at !== null, 30_000);
  }, 60_000);
});
