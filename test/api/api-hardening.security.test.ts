import { createHash, randomBytes, randomUUID } from 'node:crypto';

import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { buildApp } from '../../src/app';
import { checksumOf } from '../../src/domain/tokens/token-format';
import { createTestContext, type TestContext } from '../harness';

/**
 * DECISIONS, "Access, hardened": every /api/v1 answer says it is not to be kept (Cache-Control:
 * no-store) nor read as another type (nosniff); a string of the old token format that is no
 * token counts against the address's failure budget before any database read, as a checksum
 * failure does, while real old-format tokens keep working.
 */
const FAILURES = 5;
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ AUTH_FAILURES_PER_MINUTE: String(FAILURES), TRUST_PROXY: '1' });
}, 120_000);
afterAll(async () => ctx?.close());

let n = 0;
const address = () => `192.0.2.${++n}`;
/** A random string of the old format's shape: csk_ and 43 base64url characters. */
const oldShape = () => `csk_${randomBytes(32).toString('base64url')}`;

describe('answers are not kept', () => {
  it('carry Cache-Control: no-store and X-Content-Type-Options: nosniff: 200, 401, 404, 422 and 429', async () => {
    const company = await ctx.newCompany();
    const from = { 'x-forwarded-for': address() };
    const answers = {
      200: await ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: { ...company.auth, ...from } }),
      401: await ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: from }),
      404: await ctx.app.inject({ method: 'GET', url: `/api/v1/claims/${randomUUID()}`, headers: { ...company.auth, ...from } }),
      '404 (no such route)': await ctx.app.inject({ method: 'GET', url: '/api/v1/no-such-thing', headers: from }),
      422: await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: { ...company.auth, ...from }, payload: {} }),
      429: await (async () => {
        for (let i = 0; i < FAILURES; i++) await ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: from });
        return ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: from });
      })(),
      'the OpenAPI document': await ctx.app.inject({ method: 'GET', url: '/api/v1/openapi.json' }),
    };
    for (const [status, res] of Object.entries(answers)) {
      if (/^\d+/u.test(status)) expect(res.statusCode, status).toBe(Number(status.slice(0, 3)));
      expect(res.headers['cache-control'], status).toBe('no-store');
      expect(res.headers['x-content-type-options'], status).toBe('nosniff');
    }
  });
});

describe('old token format', () => {
  it('a real old-format token keeps working (known when the service starts)', async () => {
    const company = await ctx.newCompany();
    const old = oldShape();
    await ctx.deps.db.query(
      `INSERT INTO api_tokens (company_id, name, token_hash, token_prefix, scopes) VALUES ($1, 'old token', $2, $3, ARRAY['claims:read'])`,
      [company.id, createHash('sha256').update(old).digest('hex'), old.slice(0, 10)],
    );
    // The service restarted (its tokens of the old format are read at the start).
    const app = await buildApp(ctx.deps, { logger: pino({ level: 'silent' }) });
    await app.ready();
    try {
      const res = await app.inject({ method: 'GET', url: '/api/v1/claims', headers: { authorization: `Bearer ${old}` } });
      expect(res.statusCode).toBe(200);
      // Revoked, it is refused.
      const id = (await ctx.deps.tokens.list(company.id)).find((x) => x.name === 'old token')!.id;
      await ctx.deps.tokens.revoke(id, company.id);
      expect((await app.inject({ method: 'GET', url: '/api/v1/claims', headers: { authorization: `Bearer ${old}` } })).statusCode).toBe(
        401,
      );
    } finally {
      await app.close();
    }
  });

  it('a string of its shape that is no token counts against the failure budget with no database read', async () => {
    // A service whose database is gone: any read of it fails (500, or 503 on PostgreSQL).
    const broken = await createTestContext({ AUTH_FAILURES_PER_MINUTE: String(FAILURES) });
    try {
      await broken.deps.db.close();
      const call = (token: string) =>
        broken.app.inject({ method: 'GET', url: '/api/v1/claims', headers: { authorization: `Bearer ${token}` } });
      // A well-formed token of the current format is looked up: the database is asked, and fails.
      const body = randomBytes(15).toString('hex');
      expect((await call(`csk_${body}${checksumOf(body)}`)).statusCode).toBeGreaterThanOrEqual(500);
      // Old-format strings: each refused 401 without the database, counted; past the budget 429.
      for (let i = 0; i < FAILURES; i++) {
        const res = await call(oldShape());
        expect(res.statusCode, `string ${i + 1}: ${res.body}`).toBe(401);
      }
      const limited = await call(oldShape());
      expect(limited.statusCode).toBe(429);
      expect(limited.json().code).toBe('rate_limited');
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    } finally {
      await broken.close().catch(() => {});
    }
  }, 120_000);
});

describe('the failure budget against parallel guesses', () => {
  it('answers at most its budget of 401s to one address guessing in parallel, and 429 to the rest', async () => {
    const from = { 'x-forwarded-for': address() };
    // Well-formed tokens of the current format: each one is looked up in the database.
    const guess = () => {
      const body = randomBytes(15).toString('hex');
      return `csk_${body}${checksumOf(body)}`;
    };
    const answers = await Promise.all(
      Array.from({ length: FAILURES * 3 }, () =>
        ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: { ...from, authorization: `Bearer ${guess()}` } }),
      ),
    );
    const counts = answers.reduce<Record<number, number>>((acc, r) => ({ ...acc, [r.statusCode]: (acc[r.statusCode] ?? 0) + 1 }), {});
    expect(counts).toEqual({ 401: FAILURES, 429: FAILURES * 2 });
    // Another address is not held up by this one's guesses.
    const other = await ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: { 'x-forwarded-for': address() } });
    expect(other.statusCode).toBe(401);
  });
});
