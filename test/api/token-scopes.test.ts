import { randomUUID } from 'node:crypto';

import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { isScopeNeed } from '../../src/domain/access/access';
import { buildApp } from '../../src/app';
import { TOKEN_SCOPES, type TokenScope } from '../../src/domain/tokens/scopes';
import { checksumOf } from '../../src/domain/tokens/token-format';
import { createTestContext, type Company, type TestContext } from '../harness';

/**
 * Token scopes: every /api/v1 route states the scope it needs where it is registered
 * (`config.access`), and the app records them (`app.accessTable`). The matrix below is driven by
 * those registrations: each route, called with a token of each scope alone, is refused (403
 * insufficient_scope, exactly as DECISIONS words it) unless the scope grants it; a route that is
 * neither public nor needs a scope fails the first test.
 */
let ctx: TestContext;
let company: Company;
const tokens = {} as Record<TokenScope, string>;
beforeAll(async () => {
  ctx = await createTestContext();
  company = await ctx.newCompany('Scopes');
  for (const scope of TOKEN_SCOPES)
    tokens[scope] = (await ctx.deps.tokens.create(company.id, `only ${scope}`, null, { scopes: [scope] })).token;
});
afterAll(() => ctx.close());

/** A request to the route with made-up ids: the scope check comes before anything it would read. */
function call(key: string, token: string) {
  const [method, pattern] = key.split(' ') as [string, string];
  const url = pattern.replace(/:\w+/gu, randomUUID());
  return ctx.app.inject({
    method: method as 'GET',
    url,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(method === 'GET' ? {} : { payload: '{}' }),
  });
}

const grants = (scope: TokenScope, needed: TokenScope) => scope === needed || (scope === 'claims:write' && needed === 'claims:read');

/** Every /api/v1 route that takes a token, with the scope it states. */
function tokenRoutes(): [string, TokenScope][] {
  return ctx.app.accessTable
    .filter((e) => e.surface === 'api' && e.need !== 'public')
    .map((e) => {
      if (!isScopeNeed(e.need)) throw new Error(`${e.method} ${e.url} is an API route whose need is not a scope`);
      return [`${e.method} ${e.url}`, e.need.scope];
    });
}

describe('the route scope table', () => {
  it('has a scope for every /api/v1 route the app registers but the public document', () => {
    const api = ctx.app.accessTable.filter((e) => e.surface === 'api');
    expect(api.filter((e) => e.need === 'public').map((e) => `${e.method} ${e.url}`)).toEqual(['GET /api/v1/openapi.json']);
    expect(tokenRoutes().length).toBeGreaterThan(15);
  });

  it('refuses every route to a token without the scope it needs, with 403 insufficient_scope; a token with it passes', async () => {
    for (const [route, needed] of tokenRoutes()) {
      for (const scope of TOKEN_SCOPES) {
        const res = await call(route, tokens[scope]);
        if (grants(scope, needed)) {
          expect(res.statusCode, `${route} with ${scope}`).not.toBe(403);
          expect(res.statusCode, `${route} with ${scope}`).not.toBe(401);
        } else {
          expect(res.statusCode, `${route} with ${scope}`).toBe(403);
          expect(res.json()).toEqual({
            message: `This token lacks the scope ${needed}.`,
            code: 'insufficient_scope',
            request_id: res.headers['x-request-id'],
          });
          expect(res.headers['www-authenticate']).toBe(`Bearer error="insufficient_scope", scope="${needed}"`);
        }
      }
    }
  });

  it('states each operation’s scope and its 403 in the OpenAPI document', async () => {
    const doc = (await ctx.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<{
      paths: Record<string, Record<string, { security: unknown; responses: Record<string, { description: string }> }>>;
    }>();
    for (const [route, scope] of tokenRoutes()) {
      const [method, pattern] = route.split(' ') as [string, string];
      const op = doc.paths[pattern.replace(/:(\w+)/gu, '{$1}')]?.[method.toLowerCase()];
      expect(op, route).toBeDefined();
      expect(op!.security, route).toEqual([{ bearerAuth: [scope] }]);
      expect(op!.responses['403']?.description, route).toContain(`insufficient_scope`);
    }
  });
});

describe('token format', () => {
  it('is csk_, 30 base62 characters and their 6-character base62 CRC32', () => {
    const m = /^csk_([0-9A-Za-z]{30})([0-9A-Za-z]{6})$/u.exec(company.token);
    expect(m).not.toBeNull();
    expect(checksumOf(m![1]!)).toBe(m![2]);
    // CRC32("123456789") is 0xCBF43926 = 3421780262: base62 (0-9A-Za-z, most significant first) "3jZRME".
    expect(checksumOf('123456789')).toBe('3jZRME');
    expect(checksumOf('')).toBe('000000');
  });

  it('refuses a token whose checksum fails with 401, without reading the database', async () => {
    const body = company.token.slice(4, 34);
    const sum = company.token.slice(34);
    const wrong = `csk_${body}${sum === '000000' ? '000001' : '000000'}`;
    const tokenStore = ctx.deps.repos.tokens;
    const original = tokenStore.authenticate.bind(tokenStore);
    let reads = 0;
    tokenStore.authenticate = (hash) => {
      reads++;
      return original(hash);
    };
    try {
      const res = await ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: { authorization: `Bearer ${wrong}` } });
      expect(res.statusCode).toBe(401);
      expect(res.json().code).toBe('unauthenticated');
      expect(reads).toBe(0);
      // A well-formed unknown token is looked up (and refused).
      const unknownBody = 'A'.repeat(30);
      const unknown = `csk_${unknownBody}${checksumOf(unknownBody)}`;
      expect(
        (await ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: { authorization: `Bearer ${unknown}` } })).statusCode,
      ).toBe(401);
      expect(reads).toBe(1);
    } finally {
      tokenStore.authenticate = original;
    }
  });

  it('keeps tokens of the earlier format (csk_ and 43 base64url characters, all scopes, no expiry) working', async () => {
    const old = `csk_${Buffer.alloc(32, 7).toString('base64url')}`;
    const { createHash } = await import('node:crypto');
    await ctx.deps.db.query(
      `INSERT INTO api_tokens (company_id, name, token_hash, token_prefix, scopes) VALUES ($1, 'old token', $2, $3,
         ARRAY['claims:read', 'claims:write', 'search', 'imports', 'alerts:read', 'logs:read'])`,
      [company.id, createHash('sha256').update(old).digest('hex'), old.slice(0, 10)],
    );
    // Old-format tokens are those the service knows when it starts (a restart: a new app on the same services).
    const restarted = await buildApp(ctx.deps, { logger: pino({ level: 'silent' }) });
    await restarted.ready();
    const res = await restarted.inject({ method: 'GET', url: '/api/v1/claims', headers: { authorization: `Bearer ${old}` } });
    await restarted.close();
    expect(res.statusCode).toBe(200);
    const listed = (await ctx.deps.tokens.list(company.id)).find((t) => t.name === 'old token')!;
    expect(listed).toMatchObject({ expires_at: null, scopes: [...TOKEN_SCOPES] });
  });
});

describe('scopes at creation', () => {
  it('are required, known, and listed', async () => {
    await expect(ctx.deps.tokens.create(company.id, 'none', null, { scopes: [] })).rejects.toMatchObject({
      fields: { scopes: ['Choose at least one scope.'] },
    });
    await expect(ctx.deps.tokens.create(company.id, 'bad', null, { scopes: ['claims:delete'] })).rejects.toMatchObject({
      fields: { scopes: [expect.stringContaining('claims:delete')] },
    });
    const t = await ctx.deps.tokens.create(company.id, 'two', null, { scopes: 'search,alerts:read' });
    expect(t.scopes).toEqual(['search', 'alerts:read']);
  });
});
