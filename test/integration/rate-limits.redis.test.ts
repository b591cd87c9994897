import { randomBytes } from 'node:crypto';

import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, TEST_HASH_KEY, type TestContext } from '../harness';
import { answering, freePort, kill, removeQueueKeys, startScript, type Child } from '../processes';

/**
 * The abuse limits hold across processes: two API servers (`npm start`) sharing one Redis count
 * against the same budgets, a token's and an address's failed authentications alike.
 */
const redisUrl = process.env.TEST_REDIS_URL!;
const PER_MINUTE = 6;
const FAILURES = 4;

describe('rate limits across two API processes sharing Redis', () => {
  const prefix = `test-limits-${randomBytes(4).toString('hex')}`;
  let ctx: TestContext;
  let apis: { child: Child; base: string }[] = [];

  beforeAll(async () => {
    ctx = await createTestContext({ REDIS_URL: redisUrl, QUEUE_PREFIX: prefix });
    const schema = (await ctx.deps.db.query<{ s: string }>('SELECT current_schema() AS s'))[0]!.s;
    const env = {
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: prefix,
      DATABASE_URL: process.env.TEST_DATABASE_URL!,
      DB_SEARCH_PATH: schema,
      DB_POOL_SIZE: '2',
      DOCUMENT_HASH_KEY: TEST_HASH_KEY,
      SESSION_SECRET: 'test-session-secret-0123456789abcdef0123',
      DATA_DIR: ctx.config.dataDir,
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_MINUTE: String(PER_MINUTE),
      AUTH_FAILURES_PER_MINUTE: String(FAILURES),
    };
    apis = await Promise.all(
      [0, 1].map(async () => {
        const port = await freePort();
        return { child: startScript('start', { ...env, PORT: String(port) }), base: `http://127.0.0.1:${port}` };
      }),
    );
    await Promise.all(apis.map((a) => answering(a.child, a.base)));
  }, 60_000);

  afterAll(async () => {
    await Promise.all(apis.map((a) => kill(a.child, 'SIGTERM')));
    await ctx?.close();
    await removeQueueKeys(redisUrl, prefix);
  }, 60_000);

  const get = (i: number, authorization?: string) =>
    fetch(`${apis[i % 2]!.base}/api/v1/claims`, { headers: authorization ? { authorization } : {} });

  it("counts a token's requests to either process against one budget", async () => {
    const c = await ctx.newCompany('Two processes');
    const statuses: number[] = [];
    const remaining: string[] = [];
    for (let i = 0; i < PER_MINUTE + 2; i++) {
      const res = await get(i, c.auth.authorization);
      statuses.push(res.status);
      remaining.push(res.headers.get('ratelimit-remaining') ?? '');
    }
    expect(statuses).toEqual([...Array(PER_MINUTE).fill(200), 429, 429]);
    expect(remaining.slice(0, PER_MINUTE)).toEqual(['5', '4', '3', '2', '1', '0']);
  });

  it("counts an address's failed authentications at either process against one budget", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < FAILURES + 2; i++) statuses.push((await get(i, `Bearer csk_${randomBytes(32).toString('base64url')}`)).status);
    expect(statuses).toEqual([...Array(FAILURES).fill(401), 429, 429]);
  });

  it("takes a token's requests from Redis a hundredth of its limit at a time, and the limit holds", async () => {
    const c = await ctx.newCompany('Leases');
    await ctx.deps.repos.companies.setRateLimits(c.id, { perToken: 500 });
    await ctx.app.rateLimits.refreshCompanyLimits();
    const { id } = (await ctx.deps.db.query<{ id: string }>('SELECT id FROM api_tokens WHERE company_id = $1', [c.id]))[0]!;
    const redis = new Redis(redisUrl);
    try {
      const counted = () => redis.get(`${prefix}:rate-limit:token:${id}`);
      const claims = () => ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: c.auth });
      const first = await claims();
      expect(first.statusCode).toBe(200);
      expect(first.headers['ratelimit-remaining']).toBe('499');
      // This process took five (a hundredth of 500) and counts them itself.
      expect(await counted()).toBe('5');
      for (let i = 0; i < 4; i++) await claims();
      expect(await counted()).toBe('5');
      const statuses: number[] = [];
      for (let i = 5; i < 502; i++) statuses.push((await claims()).statusCode);
      expect(statuses.filter((s) => s === 200)).toHaveLength(495);
      expect(statuses.slice(-2)).toEqual([429, 429]);
    } finally {
      redis.disconnect();
    }
  });
});
