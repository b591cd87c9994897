import { randomUUID } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { apiError, createTestContext, type TestContext, type Company, submitClaim } from '../harness';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx.close());

const newClaim = (company: Company, overrides: Record<string, unknown> = {}) => submitClaim(ctx, company, overrides);

const patch = (company: Company, id: string, payload: unknown) =>
  ctx.app.inject({ method: 'PATCH', url: `/api/v1/claims/${id}/status`, headers: company.auth, payload: payload as object });

async function tokenIdOf(company: Company): Promise<string> {
  const [token] = await ctx.deps.tokens.list(company.id);
  return token!.id;
}

describe('PATCH /api/v1/claims/:id/status', () => {
  it('returns 200 with the whole claim carrying the new status', async () => {
    const company = await ctx.newCompany();
    const claim = await newClaim(company);
    const res = await patch(company, claim.id, { status: 'under_investigation' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ data: { ...claim, status: 'under_investigation' } });
  });

  it('stores the new status: a later read shows it', async () => {
    const company = await ctx.newCompany();
    const claim = await newClaim(company);
    await patch(company, claim.id, { status: 'settled' });
    const read = await ctx.app.inject({ method: 'GET', url: `/api/v1/claims/${claim.id}`, headers: company.auth });
    expect(read.json().data.status).toBe('settled');
  });

  it('allows any status to follow any status, back to filed included', async () => {
    const company = await ctx.newCompany();
    const claim = await newClaim(company, { status: 'closed' });
    for (const status of ['disputed', 'filed', 'settled', 'under_investigation', 'closed']) {
      const res = await patch(company, claim.id, { status });
      expect(res.statusCode, status).toBe(200);
      expect(res.json().data.status).toBe(status);
    }
  });

  it('records every change with who made it, from and to', async () => {
    const company = await ctx.newCompany();
    const claim = await newClaim(company);
    await patch(company, claim.id, { status: 'under_investigation' });
    await patch(company, claim.id, { status: 'settled' });
    const tokenId = await tokenIdOf(company);
    expect(await ctx.deps.repos.claims.statusHistory(company.id, claim.id)).toEqual([
      { from_status: 'filed', to_status: 'under_investigation', changed_by_token_id: tokenId, changed_by_user_id: null },
      { from_status: 'under_investigation', to_status: 'settled', changed_by_token_id: tokenId, changed_by_user_id: null },
    ]);
  });

  it('answers setting the current status again with 200 and changes and records nothing', async () => {
    const company = await ctx.newCompany();
    const claim = await newClaim(company, { status: 'disputed' });
    const res = await patch(company, claim.id, { status: 'disputed' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ data: claim });
    expect(await ctx.deps.repos.claims.statusHistory(company.id, claim.id)).toEqual([]);
  });

  it("refuses another company's claim with 403, leaving the claim and its history unchanged", async () => {
    const owner = await ctx.newCompany('Owner');
    const other = await ctx.newCompany('Other');
    const claim = await newClaim(owner);
    const res = await patch(other, claim.id, { status: 'closed' });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual(apiError('forbidden', 'This action is unauthorized.'));
    const read = await ctx.app.inject({ method: 'GET', url: `/api/v1/claims/${claim.id}`, headers: owner.auth });
    expect(read.json().data.status).toBe('filed');
    expect(await ctx.deps.repos.claims.statusHistory(owner.id, claim.id)).toEqual([]);
  });

  it("refuses another company's claim with 403 even when the status would not change", async () => {
    const owner = await ctx.newCompany();
    const other = await ctx.newCompany();
    const claim = await newClaim(owner);
    const res = await patch(other, claim.id, { status: 'filed' });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual(apiError('forbidden', 'This action is unauthorized.'));
  });

  it('answers an unknown claim id with 404 "Claim not found."', async () => {
    const company = await ctx.newCompany();
    const res = await patch(company, randomUUID(), { status: 'closed' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual(apiError('claim_not_found', 'Claim not found.'));
  });

  it('answers an id that is not a UUID with 404 "Claim not found."', async () => {
    const company = await ctx.newCompany();
    for (const id of ['123', 'not-a-uuid', `${randomUUID()}x`, 'x'.repeat(80)]) {
      const res = await patch(company, id, { status: 'closed' });
      expect(res.statusCode, id).toBe(404);
      expect(res.json()).toEqual(apiError('claim_not_found', 'Claim not found.'));
    }
  });

  it('rejects an unknown status with 422 on status, changing nothing', async () => {
    const company = await ctx.newCompany();
    const claim = await newClaim(company);
    const res = await patch(company, claim.id, { status: 'reopened' });
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual(
      apiError('validation_failed', 'The status field must be one of: filed, under_investigation, settled, closed, disputed.', {
        status: ['The status field must be one of: filed, under_investigation, settled, closed, disputed.'],
      }),
    );
    expect(await ctx.deps.repos.claims.statusHistory(company.id, claim.id)).toEqual([]);
  });

  it('rejects a missing or non-string status with 422 on status', async () => {
    const company = await ctx.newCompany();
    const claim = await newClaim(company);
    const missing = await patch(company, claim.id, {});
    expect(missing.statusCode).toBe(422);
    expect(missing.json()).toEqual(
      apiError('validation_failed', 'The status field is required.', { status: ['The status field is required.'] }),
    );
    for (const status of [null, 3, ['closed']]) {
      const res = await patch(company, claim.id, { status });
      expect(res.statusCode, JSON.stringify(status)).toBe(422);
      expect(Object.keys(res.json().errors)).toEqual(['status']);
    }
  });

  it('ignores other fields in the body', async () => {
    const company = await ctx.newCompany();
    const claim = await newClaim(company);
    const res = await patch(company, claim.id, { status: 'closed', amount: 1, vehicle_registration: 'ZZ999' });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toEqual({ ...claim, status: 'closed' });
  });
});
