import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { apiError, createTestContext, type Company, type TestContext } from '../harness';
import { plate, postLookupBatch } from '../import-helpers';

/**
 * Abuse limits (DECISIONS, "Rate limits, on by default"): a budget per token, whatever the header's
 * spelling; failed authentications per client address, refused past their budget before any
 * database read; the RateLimit headers; a company's own limit; a batch look-up counted per plate.
 * Across processes: test/integration/rate-limits.redis.test.ts.
 */
const PER_MINUTE = 8;
const FAILURES = 60;
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ RATE_LIMIT_PER_MINUTE: String(PER_MINUTE), AUTH_FAILURES_PER_MINUTE: String(FAILURES) });
});
afterAll(async () => ctx?.close());

const list = (authorization: string, remoteAddress = '127.0.0.1') =>
  ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: { authorization }, remoteAddress });
const fakeToken = () => `csk_${randomBytes(32).toString('base64url')}`;

describe('per token', () => {
  it('is one budget however the Authorization header spells the scheme, with the RateLimit headers on every answer', async () => {
    const c = await ctx.newCompany('Spellings');
    const spellings = [`Bearer ${c.token}`, `bearer ${c.token}`, `BEARER  ${c.token}`, `Bearer\t${c.token}`, `bEaReR   ${c.token}  `];
    const answers = [];
    for (let i = 0; i < PER_MINUTE; i++) answers.push(await list(spellings[i % spellings.length]!));
    expect(answers.map((r) => r.statusCode)).toEqual(Array(PER_MINUTE).fill(200));
    expect(answers.map((r) => Number(r.headers['ratelimit-remaining']))).toEqual([7, 6, 5, 4, 3, 2, 1, 0]);
    for (const r of answers) {
      expect(r.headers['ratelimit-limit']).toBe(String(PER_MINUTE));
      expect(Number(r.headers['ratelimit-reset'])).toBeGreaterThan(0);
      expect(Number(r.headers['ratelimit-reset'])).toBeLessThanOrEqual(60);
    }
    // Every spelling is now over the token's budget.
    for (const spelling of spellings) {
      const res = await list(spelling);
      expect(res.statusCode).toBe(429);
      expect(res.json()).toEqual(apiError('rate_limited', expect.any(String)));
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      expect(res.headers['ratelimit-remaining']).toBe('0');
    }
    // Another token has a budget of its own.
    const other = await ctx.newCompany('Other');
    expect((await list(`Bearer ${other.token}`)).statusCode).toBe(200);
  });

  it('carries the headers on error answers to a token too (a 404, a 422)', async () => {
    const c = await ctx.newCompany('Errors');
    const missing = await ctx.app.inject({ method: 'GET', url: `/api/v1/claims/${randomBytes(2).toString('hex')}`, headers: c.auth });
    expect(missing.statusCode).toBe(404);
    expect(missing.headers['ratelimit-remaining']).toBe(String(PER_MINUTE - 1));
    const invalid = await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: c.auth, payload: {} });
    expect(invalid.statusCode).toBe(422);
    expect(invalid.headers['ratelimit-remaining']).toBe(String(PER_MINUTE - 2));
  });

  it("follows the company's own limit set by the operator", async () => {
    const c = await ctx.newCompany('Own limit');
    await ctx.deps.repos.companies.setRateLimits(c.id, { perToken: 2 });
    await ctx.app.rateLimits.refreshCompanyLimits();
    expect((await list(c.auth.authorization)).headers['ratelimit-limit']).toBe('2');
    expect((await list(c.auth.authorization)).statusCode).toBe(200);
    expect((await list(c.auth.authorization)).statusCode).toBe(429);
    // 0: no limit for this company (no headers either).
    const free = await ctx.newCompany('No limit');
    await ctx.deps.repos.companies.setRateLimits(free.id, { perToken: 0, perCompany: 0 });
    await ctx.app.rateLimits.refreshCompanyLimits();
    for (let i = 0; i < PER_MINUTE + 2; i++) expect((await list(free.auth.authorization)).statusCode).toBe(200);
    expect((await list(free.auth.authorization)).headers['ratelimit-limit']).toBeUndefined();
  });
});

describe('failed authentications per client address', () => {
  it('answers the 61st missing, malformed or unknown token 429 without reading the database, while a known token goes on', async () => {
    const address = '198.51.100.7';
    const known = await ctx.newCompany('Known token');
    // The token is used once from elsewhere: this process has seen it valid.
    expect((await list(known.auth.authorization)).statusCode).toBe(200);
    const tokens = ctx.deps.repos.tokens;
    const authenticate = tokens.authenticate.bind(tokens);
    let reads = 0;
    tokens.authenticate = (hash: string) => {
      reads++;
      return authenticate(hash);
    };
    try {
      const answers = [];
      for (let i = 0; i < FAILURES; i++) answers.push((await list(`Bearer ${fakeToken()}`, address)).statusCode);
      expect(answers).toEqual(Array(FAILURES).fill(401));
      // Strings of the old token format that are no token are refused without a read, as a
      // checksum failure is (DECISIONS, "Old token format").
      expect(reads).toBe(0);
      // Past the budget: refused before any read, whatever the token.
      const unknown = await list(`Bearer ${fakeToken()}`, address);
      expect(unknown.statusCode).toBe(429);
      expect(unknown.json()).toEqual(apiError('rate_limited', expect.any(String)));
      expect(Number(unknown.headers['retry-after'])).toBeGreaterThan(0);
      expect((await list('Bearer not-a-token', address)).statusCode).toBe(429);
      expect((await ctx.app.inject({ method: 'GET', url: '/api/v1/claims', remoteAddress: address })).statusCode).toBe(429);
      expect(reads).toBe(0);
      // A token seen valid goes on from that address; another address has a budget of its own.
      expect((await list(known.auth.authorization, address)).statusCode).toBe(200);
      expect((await list(`Bearer ${fakeToken()}`, '198.51.100.8')).statusCode).toBe(401);
    } finally {
      tokens.authenticate = authenticate;
    }
  });
});

describe('a batch plate look-up', () => {
  const upload = (company: Company, plates: string[]) =>
    postLookupBatch(ctx.app, company.auth, ['vehicle_registration', ...plates].join('\n'));

  it('counts one request per plate (the upload itself not besides) and is refused when its plates do not fit', async () => {
    const c = await ctx.newCompany('Batch');
    const first = await upload(c, [plate(), plate(), plate(), plate(), plate()]);
    expect(first.statusCode, first.body).toBe(202);
    expect(first.headers['ratelimit-remaining']).toBe(String(PER_MINUTE - 5));
    const tooMany = await upload(c, [plate(), plate(), plate(), plate()]);
    expect(tooMany.statusCode).toBe(429);
    expect(tooMany.json()).toEqual(apiError('rate_limited', expect.any(String)));
    expect(Number(tooMany.headers['retry-after'])).toBeGreaterThan(0);
    // The refused batch took nothing and recorded nothing.
    const batches = await ctx.deps.db.query<{ n: number }>('SELECT count(*)::int AS n FROM lookup_batches WHERE company_id = $1', [c.id]);
    expect(batches[0]!.n).toBe(1);
    const fits = await upload(c, [plate(), plate(), plate()]);
    expect(fits.statusCode, fits.body).toBe(202);
    expect(fits.headers['ratelimit-remaining']).toBe('0');
    expect((await list(c.auth.authorization)).statusCode).toBe(429);
  });

  it('larger than the whole limit is refused with a message that says so', async () => {
    const c = await ctx.newCompany('Big batch');
    const res = await upload(
      c,
      Array.from({ length: PER_MINUTE + 1 }, () => plate()),
    );
    expect(res.statusCode).toBe(429);
    expect(res.json().message).toContain(`${PER_MINUTE + 1} plates`);
  });
});
