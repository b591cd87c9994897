import { randomUUID } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, submitClaim, type Company, type TestContext } from '../harness';

/**
 * Every repository method that reads or writes a company's data takes the company's id and puts
 * it in its SQL: called with another company's id, it finds, counts and changes nothing.
 */
let ctx: TestContext;
let owner: Company;
let other: Company;
let claimId: string;
beforeAll(async () => {
  ctx = await createTestContext();
  owner = await ctx.newCompany('Owner');
  other = await ctx.newCompany('Other');
  claimId = (await submitClaim(ctx, owner)).id as string;
  await ctx.app.inject({
    method: 'PATCH',
    url: `/api/v1/claims/${claimId}/status`,
    headers: owner.auth,
    payload: { status: 'under_investigation' },
  });
});
afterAll(() => ctx.close());

const repos = () => ctx.deps.repos;
const actor = { tokenId: null, userId: null };

describe('claim repository: another company id returns nothing', () => {
  it('findById', async () => {
    expect(await repos().claims.findById(owner.id, claimId)).toMatchObject({ id: claimId });
    expect(await repos().claims.findById(other.id, claimId)).toBeUndefined();
  });

  it('listByCompany', async () => {
    expect((await repos().claims.listByCompany(owner.id, { after: undefined, limit: 10 })).map((c) => c.id)).toEqual([claimId]);
    expect(await repos().claims.listByCompany(other.id, { after: undefined, limit: 10 })).toEqual([]);
  });

  it('statusHistory', async () => {
    expect(await repos().claims.statusHistory(owner.id, claimId)).toHaveLength(1);
    expect(await repos().claims.statusHistory(other.id, claimId)).toEqual([]);
  });

  it('updateStatus changes nothing and only learns that the claim is not its own', async () => {
    expect(await repos().claims.updateStatus(other.id, claimId, 'closed', actor)).toEqual({ found: 'other' });
    expect(await repos().claims.updateStatus(other.id, randomUUID(), 'closed', actor)).toEqual({ found: 'none' });
    expect((await repos().claims.findById(owner.id, claimId))!.status).toBe('under_investigation');
    expect(await repos().claims.statusHistory(owner.id, claimId)).toHaveLength(1);
  });
});

describe('dashboard repository: another company id counts nothing', () => {
  it('countsByStatus', async () => {
    expect(await repos().dashboard.countsByStatus(owner.id)).toEqual([{ status: 'under_investigation', claims: 1 }]);
    expect(await repos().dashboard.countsByStatus(other.id)).toEqual([]);
  });

  it('claimsPerMonth', async () => {
    const from = '1900-01-01';
    const to = '2999-12-31';
    expect((await repos().dashboard.claimsPerMonth(owner.id, from, to)).reduce((n, m) => n + m.claims, 0)).toBe(1);
    expect(await repos().dashboard.claimsPerMonth(other.id, from, to)).toEqual([]);
  });
});

describe('company repository: people of another company are neither listed nor removed', () => {
  it('listUsers and deleteUser', async () => {
    const { user } = await ctx.deps.companies.createUser({ companyId: owner.id, email: `p-${randomUUID()}@example.com`, role: 'member' });
    expect((await repos().companies.listUsers(owner.id)).map((u) => u.id)).toContain(user.id);
    expect((await repos().companies.listUsers(other.id)).map((u) => u.id)).not.toContain(user.id);
    expect(await repos().companies.deleteUser(user.id, other.id)).toBe(false);
    expect(await repos().companies.findUserById(user.id)).toMatchObject({ id: user.id });
    expect(await repos().companies.deleteUser(user.id, owner.id)).toBe(true);
  });
});
