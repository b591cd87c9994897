import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { claimBody, companyPrincipal, createTestContext, type TestContext } from '../harness';
import { companyWithPeople, signedIn, type WebClient } from './web-client';

let ctx: TestContext;
let a: Awaited<ReturnType<typeof companyWithPeople>>;
let b: Awaited<ReturnType<typeof companyWithPeople>>;
let bAdmin: WebClient;
let aClaimId: string;
let aPlate: string;
let bClaimId: string;
beforeAll(async () => {
  ctx = await createTestContext();
  a = await companyWithPeople(ctx, 'Alpha');
  b = await companyWithPeople(ctx, 'Beta');
  const body = claimBody();
  aPlate = body.vehicle_registration;
  aClaimId = (await ctx.deps.claims.submit(companyPrincipal(a), body)).id;
  bClaimId = (await ctx.deps.claims.submit(companyPrincipal(b), claimBody())).id;
  await ctx.deps.tokens.create(a.id, 'Alpha secret system');
  await ctx.deps.tokens.create(b.id, 'Beta own system');
  bAdmin = await signedIn(ctx, b.admin.email);
});
afterAll(async () => ctx.close());

describe("a person of company B and company A's records", () => {
  it("does not list A's tokens, people or claims", async () => {
    const tokens = await bAdmin.get('/settings/tokens');
    expect(tokens.statusCode).toBe(200);
    expect(tokens.body).toContain('Beta own system');
    expect(tokens.body).not.toContain('Alpha secret system');
    const people = await bAdmin.get('/settings/people');
    expect(people.body).not.toContain(a.admin.email);
    expect(people.body).not.toContain(a.member.email);
    expect(people.body).toContain(b.member.email);
    const claims = await bAdmin.get('/claims');
    expect(claims.body).toContain(bClaimId);
    expect(claims.body).not.toContain(aClaimId);
    const overview = await bAdmin.get('/');
    expect(overview.body).toContain('1 claims in total');
  });

  it("gets 404 for A's token, and cannot revoke it", async () => {
    const [token] = (await ctx.deps.tokens.list(a.id)).filter((t) => t.name === 'test token');
    expect((await bAdmin.get(`/settings/tokens/${token!.id}/revoke`)).statusCode).toBe(404);
    await bAdmin.get('/settings/tokens');
    const res = await bAdmin.post(`/settings/tokens/${token!.id}/revoke`);
    expect(res.statusCode).toBe(404);
    const api = await ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: a.auth });
    expect(api.statusCode).toBe(200);
  });

  it("gets 404 for A's people, and cannot remove them", async () => {
    expect((await bAdmin.get(`/settings/people/${a.member.id}/remove`)).statusCode).toBe(404);
    await bAdmin.get('/settings/people');
    expect((await bAdmin.post(`/settings/people/${a.member.id}/remove`)).statusCode).toBe(404);
    expect((await ctx.deps.companies.listUsers(a.id)).map((u) => u.id)).toContain(a.member.id);
  });

  it("gets 404 for A's claim page and is refused a status change of A's claim", async () => {
    expect((await bAdmin.get(`/claims/${aClaimId}`)).statusCode).toBe(404);
    await bAdmin.get('/claims');
    const res = await bAdmin.post(`/claims/${aClaimId}/status`, { status: 'closed' });
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain('This claim belongs to another company');
    expect((await ctx.deps.claims.get(companyPrincipal(a), aClaimId)).status).toBe('filed');
  });

  it("finds A's claim by plate (shared registry) but without a link to change it", async () => {
    await bAdmin.get('/search');
    const res = await bAdmin.post('/search', { plate: aPlate });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain(a.name);
    expect(res.body).not.toContain(`/claims/${aClaimId}`);
    const own = await signedIn(ctx, a.member.email);
    await own.get('/search');
    expect((await own.post('/search', { plate: aPlate })).body).toContain(`/claims/${aClaimId}`);
  });

  it('gets 404 for ids that are not UUIDs', async () => {
    for (const url of ['/claims/nope', '/settings/tokens/nope/revoke', '/settings/people/nope/remove']) {
      expect((await bAdmin.get(url)).statusCode, url).toBe(404);
    }
  });
});
