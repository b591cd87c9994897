import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { apiError, claimBody, createTestContext, submitClaim, type Company, type TestContext } from '../harness';

/**
 * A look-up whose log entry cannot be written is not answered: 503, and no claim of another
 * company leaves. Once the log can be written again, look-ups are answered and recorded.
 */
let ctx: TestContext;
let owner: Company;
let searcher: Company;
let claim: { id: string; vehicle_registration: string };

beforeAll(async () => {
  ctx = await createTestContext();
  owner = await ctx.newCompany('Owner');
  searcher = await ctx.newCompany('Searcher');
  claim = await submitClaim(ctx, owner);
});
afterAll(async () => ctx?.close());

const unavailable = apiError(
  'service_unavailable',
  'The look-up log cannot be written right now, so no look-up is answered. Try again later.',
);

describe('a look-up log that cannot be written', () => {
  it('answers plate searches, person searches and matches 503 without their results, then answers again once it can be written', async () => {
    const plateSearch = () =>
      ctx.app.inject({
        method: 'POST',
        url: '/api/v1/claims/search-by-plate',
        headers: searcher.auth,
        payload: { vehicle_registration: claim.vehicle_registration },
      });
    const { client } = claimBody();
    const personSearch = () =>
      ctx.app.inject({ method: 'POST', url: '/api/v1/claims/search-by-person', headers: searcher.auth, payload: client });
    const matches = () => ctx.app.inject({ method: 'GET', url: `/api/v1/claims/${claim.id}/matches`, headers: owner.auth });

    await ctx.deps.db.query('ALTER TABLE lookups RENAME TO lookups_away');
    try {
      for (const res of [await plateSearch(), await personSearch(), await matches()]) {
        expect(res.statusCode).toBe(503);
        expect(res.json()).toEqual(unavailable);
        expect(res.body).not.toContain(claim.id);
      }
    } finally {
      await ctx.deps.db.query('ALTER TABLE lookups_away RENAME TO lookups');
    }

    const res = await plateSearch();
    expect(res.statusCode).toBe(200);
    expect(res.json().data.map((c: { id: string }) => c.id)).toEqual([claim.id]);
    const logged = await ctx.app.inject({ method: 'GET', url: '/api/v1/lookups', headers: searcher.auth });
    expect(logged.json().data.map((l: { kind: string }) => l.kind)).toEqual(['plate_search']);
  });
});
