import { randomBytes, randomUUID } from 'node:crypto';

import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { apiError, claimBody, createTestContext, type TestContext, addDays, type Company } from '../harness';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx.close());

const validBody = () => claimBody({ claim_date: addDays(ctx.deps.today(), -3) });

/** Every authenticated route under /api/v1, with a request that would succeed with a live token. */
const routes = (claimId: string): { name: string; request: InjectOptions }[] => [
  { name: 'POST /claims', request: { method: 'POST', url: '/api/v1/claims', payload: validBody() } },
  { name: 'GET /claims', request: { method: 'GET', url: '/api/v1/claims' } },
  { name: 'GET /claims/:id', request: { method: 'GET', url: `/api/v1/claims/${claimId}` } },
  {
    name: 'PATCH /claims/:id/status',
    request: { method: 'PATCH', url: `/api/v1/claims/${claimId}/status`, payload: { status: 'closed' } },
  },
  {
    name: 'POST /claims/search-by-plate',
    request: { method: 'POST', url: '/api/v1/claims/search-by-plate', payload: { vehicle_registration: 'AB123' } },
  },
];

async function ownClaim(company: Company): Promise<string> {
  const res = await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: validBody() });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().data.id;
}

async function expectUnauthenticated(request: InjectOptions, headers: Record<string, string>, label: string) {
  const res = await ctx.app.inject({ ...request, headers: { ...(request.headers as Record<string, string>), ...headers } });
  expect(res.statusCode, label).toBe(401);
  expect(res.headers['content-type'], label).toMatch(/^application\/json/);
  expect(res.json(), label).toEqual(apiError('unauthenticated', 'Unauthenticated.'));
}

const wellFormedUnknown = () => `csk_${randomBytes(32).toString('base64url')}`;

describe('authentication on every /api/v1 claims route', () => {
  it('succeeds with a live token on every route (so the 401s below are about the token alone)', async () => {
    const company = await ctx.newCompany();
    const id = await ownClaim(company);
    for (const { name, request } of routes(id)) {
      const res = await ctx.app.inject({ ...request, headers: company.auth });
      expect(res.statusCode, name).toBeLessThan(300);
    }
  });

  it('answers a request without Authorization with 401 {"message":"Unauthenticated."}', async () => {
    const company = await ctx.newCompany();
    const id = await ownClaim(company);
    for (const { name, request } of routes(id)) await expectUnauthenticated(request, {}, name);
  });

  it('answers a malformed Authorization header with 401', async () => {
    const company = await ctx.newCompany();
    const id = await ownClaim(company);
    const malformed = [
      '',
      'Bearer',
      'Bearer ',
      company.token,
      `Basic ${Buffer.from(`user:${company.token}`).toString('base64')}`,
      `Token ${company.token}`,
      `Bearer ${company.token} extra`,
      `Bearer ${company.token.slice(0, -1)}`,
      `Bearer ${company.token}x`,
      `Bearer ${company.token.replace('csk_', 'xsk_')}`,
      'Bearer csk_short',
    ];
    for (const { name, request } of routes(id)) {
      for (const authorization of malformed) await expectUnauthenticated(request, { authorization }, `${name} with "${authorization}"`);
    }
  });

  it('answers an unknown but well-formed token with 401', async () => {
    const company = await ctx.newCompany();
    const id = await ownClaim(company);
    for (const { name, request } of routes(id)) {
      await expectUnauthenticated(request, { authorization: `Bearer ${wellFormedUnknown()}` }, name);
    }
  });

  it('answers a revoked token with 401 at once, on every route, while another token of the company still works', async () => {
    const company = await ctx.newCompany();
    const id = await ownClaim(company);
    const second = await ctx.deps.tokens.create(company.id, 'second');
    const [first] = (await ctx.deps.tokens.list(company.id)).filter((t) => t.name === 'test token');
    await ctx.deps.tokens.revoke(first!.id, company.id);
    for (const { name, request } of routes(id)) await expectUnauthenticated(request, company.auth, name);
    const res = await ctx.app.inject({ method: 'GET', url: `/api/v1/claims/${id}`, headers: { authorization: `Bearer ${second.token}` } });
    expect(res.statusCode).toBe(200);
  });

  it('checks the token before the body: an invalid body without a token is a 401, not a 422', async () => {
    const res = await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', payload: { nonsense: true } });
    expect(res.statusCode).toBe(401);
    const badJson = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims',
      headers: { 'content-type': 'application/json' },
      payload: '{not json',
    });
    expect(badJson.statusCode).toBe(401);
  });

  it('checks the token before looking the claim up: an unknown id without a token is a 401, not a 404', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: `/api/v1/claims/${randomUUID()}` });
    expect(res.statusCode).toBe(401);
  });

  it('accepts the Bearer scheme in any letter case', async () => {
    const company = await ctx.newCompany();
    const res = await ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: { authorization: `bearer ${company.token}` } });
    expect(res.statusCode).toBe(200);
  });

  it("acts for the token's company: the claim is stored under it", async () => {
    const company = await ctx.newCompany('Token owner');
    const res = await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: validBody() });
    expect(res.json().data.company_name).toBe(company.name);
  });
});

describe('API tokens', () => {
  it('carry the csk_ prefix and are stored only as a hash', async () => {
    const company = await ctx.newCompany();
    expect(company.token).toMatch(/^csk_[0-9A-Za-z]{36}$/);
    const rows = await ctx.deps.db.query<Record<string, unknown>>('SELECT * FROM api_tokens WHERE company_id = $1', [company.id]);
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(company.token);
  });

  it('are listed with name, creation time and last use, never the value', async () => {
    const company = await ctx.newCompany();
    const [before] = await ctx.deps.tokens.list(company.id);
    expect(before!.last_used_at).toBeNull();
    await ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: company.auth });
    const list = await ctx.deps.tokens.list(company.id);
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({
      name: 'test token',
      created_at: expect.any(String),
      last_used_at: expect.any(String),
      revoked_at: null,
    });
    expect(JSON.stringify(list)).not.toContain(company.token);
  });

  it("cannot be revoked by another company (another company's token id is not found)", async () => {
    const owner = await ctx.newCompany();
    const other = await ctx.newCompany();
    const [token] = await ctx.deps.tokens.list(owner.id);
    await expect(ctx.deps.tokens.revoke(token!.id, other.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const res = await ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: owner.auth });
    expect(res.statusCode).toBe(200);
  });
});
