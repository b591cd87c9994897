import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, TEST_HASH_KEY, type TestContext } from '../harness';
import { answering, freePort, kill, removeQueueKeys, startScript, type Child } from '../processes';
import { companyWithPeople, httpApp, PASSWORD, WebClient } from '../web/web-client';

/**
 * Sign-in attempts are counted, before they are checked, where every server process sees them:
 * two `npm start` processes on one PostgreSQL, with Redis (REDIS_URL) and without it (the database
 * counts). An attacker who spreads attempts over both processes, sends them at once, and writes
 * another X-Forwarded-For each time (no TRUST_PROXY: not believed), still gets 10 tries per email
 * from an address.
 */
const redisUrl = process.env.TEST_REDIS_URL!;

for (const withRedis of [true, false]) {
  describe(`sign-in throttling across two server processes ${withRedis ? 'with Redis' : 'in the database (no REDIS_URL)'}`, () => {
    const prefix = `test-throttle-${randomBytes(4).toString('hex')}`;
    let ctx: TestContext;
    let servers: { child: Child; base: string }[] = [];

    beforeAll(async () => {
      const shared: Record<string, string> = withRedis ? { REDIS_URL: redisUrl, QUEUE_PREFIX: prefix } : {};
      ctx = await createTestContext(shared);
      const schema = (await ctx.deps.db.query<{ s: string }>('SELECT current_schema() AS s'))[0]!.s;
      const env = {
        ...shared,
        DATABASE_URL: process.env.TEST_DATABASE_URL!,
        DB_SEARCH_PATH: schema,
        DB_POOL_SIZE: '3',
        DOCUMENT_HASH_KEY: TEST_HASH_KEY,
        SESSION_SECRET: 'test-session-secret-0123456789abcdef0123',
        ENCRYPTION_KEY: 'test-encryption-key-0123456789abcdef01234',
        DATA_DIR: ctx.config.dataDir,
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        PASSWORD_HASH_COST: '15',
      };
      servers = await Promise.all(
        [0, 1].map(async () => {
          const port = await freePort();
          return { child: startScript('start', { ...env, PORT: String(port) }), base: `http://127.0.0.1:${port}` };
        }),
      );
      await Promise.all(servers.map((s) => answering(s.child, s.base)));
    }, 90_000);

    afterAll(async () => {
      await Promise.all(servers.map((s) => kill(s.child, 'SIGTERM')));
      await ctx?.close();
      if (withRedis) await removeQueueKeys(redisUrl, prefix);
    }, 60_000);

    it('refuses the 11th attempt for an email at either process, whatever X-Forwarded-For says', async () => {
      const c = await companyWithPeople(ctx);
      for (let i = 0; i < 10; i++) {
        const web = new WebClient(httpApp(servers[i % 2]!.base), { 'x-forwarded-for': `198.51.100.${i + 1}` });
        await web.get('/login');
        const res = await web.post('/login', { email: c.member.email, password: `wrong password ${i}` });
        expect(res.statusCode, `attempt ${i + 1} at process ${(i % 2) + 1}`).toBe(401);
      }
      for (const server of servers) {
        const web = new WebClient(httpApp(server.base), { 'x-forwarded-for': '203.0.113.50' });
        await web.get('/login');
        const res = await web.post('/login', { email: c.member.email, password: PASSWORD });
        expect(res.statusCode).toBe(429);
        expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      }
      // Another person is not locked out by it.
      const web = new WebClient(httpApp(servers[0]!.base));
      await web.get('/login');
      expect((await web.post('/login', { email: c.admin.email, password: PASSWORD })).statusCode).toBe(303);
    }, 60_000);

    it('checks at most 10 of 30 wrong passwords sent at once to both processes; the rest 429 with Retry-After', async () => {
      const c = await companyWithPeople(ctx);
      const clients = await Promise.all(
        servers.map(async (server) => {
          const web = new WebClient(httpApp(server.base));
          await web.get('/login');
          return web;
        }),
      );
      const answers = await Promise.all(
        Array.from({ length: 30 }, (_x, i) => clients[i % 2]!.post('/login', { email: c.member.email, password: `wrong password ${i}` })),
      );
      const checked = answers.filter((a) => a.statusCode === 401).length;
      expect(checked).toBeLessThanOrEqual(10);
      expect(checked).toBeGreaterThan(0);
      for (const refused of answers.filter((a) => a.statusCode !== 401)) {
        expect(refused.statusCode).toBe(429);
        expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      }
    }, 120_000);
  });
}
