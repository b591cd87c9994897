import { randomUUID } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { apiError, createTestContext, type TestContext, addDays, type Company, submitClaim } from '../harness';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx.close());

type Claim = { id: string; status: string; company_name: string };

const submit = (company: Company, overrides: Record<string, unknown> = {}): Promise<Claim> => submitClaim(ctx, company, overrides);

/** Submits one after another, so created_at increases in this order. */
async function submitMany(company: Company, n: number, overrides: (i: number) => Record<string, unknown> = () => ({})) {
  const claims: Claim[] = [];
  for (let i = 0; i < n; i++) claims.push(await submit(company, overrides(i)));
  return claims;
}

const get = (company: Company, url: string) => ctx.app.inject({ method: 'GET', url, headers: company.auth });

async function page(company: Company, query: string) {
  const res = await get(company, `/api/v1/claims${query}`);
  expect(res.statusCode, res.body).toBe(200);
  const body: { data: Claim[]; meta: { next_cursor: string | null } } = res.json();
  return body;
}

/** Follows next_cursor until the last page; returns the pages' ids. */
async function allPages(company: Company, query: string): Promise<string[][]> {
  const pages: string[][] = [];
  let cursor: string | null = null;
  do {
    const sep = query ? '&' : '?';
    const result = await page(company, cursor ? `${query}${sep}cursor=${encodeURIComponent(cursor)}` : query);
    pages.push(result.data.map((c) => c.id));
    cursor = result.meta.next_cursor;
  } while (cursor && pages.length < 50);
  return pages;
}

describe('GET /api/v1/claims/:id', () => {
  it('returns a claim of the caller’s company under data, as it was returned on submission', async () => {
    const company = await ctx.newCompany();
    const claim = await submit(company, { is_at_fault: true, amount: '10.5', status: 'settled' });
    const res = await get(company, `/api/v1/claims/${claim.id}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ data: claim });
  });

  it("answers another company's claim with 404, without revealing it", async () => {
    const owner = await ctx.newCompany();
    const other = await ctx.newCompany();
    const claim = await submit(owner);
    const res = await get(other, `/api/v1/claims/${claim.id}`);
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual(apiError('claim_not_found', 'Claim not found.'));
  });

  it('answers an unknown id and a non-UUID id with 404 "Claim not found."', async () => {
    const company = await ctx.newCompany();
    for (const id of [randomUUID(), 'abc', '12345', `${randomUUID()}-1`, 'z'.repeat(90), 'z'.repeat(500)]) {
      const res = await get(company, `/api/v1/claims/${id}`);
      expect(res.statusCode, id).toBe(404);
      expect(res.json()).toEqual(apiError('claim_not_found', 'Claim not found.'));
    }
  });
});

describe('GET /api/v1/claims', () => {
  it("lists only the caller's company's claims, newest first", async () => {
    const company = await ctx.newCompany();
    const other = await ctx.newCompany();
    const mine = await submitMany(company, 3);
    await submit(other);
    const result = await page(company, '');
    expect(result.data.map((c) => c.id)).toEqual(mine.map((c) => c.id).reverse());
    expect(result.data.every((c) => c.company_name === company.name)).toBe(true);
    expect(result.meta.next_cursor).toBeNull();
  });

  it('orders by creation, not by claim date', async () => {
    const company = await ctx.newCompany();
    const recentDate = await submit(company, { claim_date: addDays(ctx.deps.today(), -1) });
    const olderDate = await submit(company, { claim_date: addDays(ctx.deps.today(), -100) });
    expect((await page(company, '')).data.map((c) => c.id)).toEqual([olderDate.id, recentDate.id]);
  });

  it('returns an empty page for a company without claims', async () => {
    const company = await ctx.newCompany();
    expect(await page(company, '')).toEqual({ data: [], meta: { next_cursor: null } });
  });

  it('pages with next_cursor through every claim once, in order', async () => {
    const company = await ctx.newCompany();
    const claims = await submitMany(company, 5);
    const pages = await allPages(company, '?limit=2');
    expect(pages.map((p) => p.length)).toEqual([2, 2, 1]);
    expect(pages.flat()).toEqual(claims.map((c) => c.id).reverse());
  });

  it('gives no next_cursor when the last page is exactly full', async () => {
    const company = await ctx.newCompany();
    await submitMany(company, 4);
    const pages = await allPages(company, '?limit=2');
    expect(pages.map((p) => p.length)).toEqual([2, 2]);
  });

  it('does not skip or repeat claims created while paging', async () => {
    const company = await ctx.newCompany();
    const claims = await submitMany(company, 3);
    const first = await page(company, '?limit=2');
    await submit(company); // newer than the cursor: belongs to a fresh first page, not to the next one
    const second = await page(company, `?limit=2&cursor=${encodeURIComponent(first.meta.next_cursor!)}`);
    expect([...first.data, ...second.data].map((c) => c.id)).toEqual(claims.map((c) => c.id).reverse());
  });

  it('returns 25 claims by default', async () => {
    const company = await ctx.newCompany();
    await submitMany(company, 26);
    const result = await page(company, '');
    expect(result.data).toHaveLength(25);
    expect(result.meta.next_cursor).toEqual(expect.any(String));
  });

  it('filters by status, also across pages', async () => {
    const company = await ctx.newCompany();
    const claims = await submitMany(company, 6, (i) => ({ status: i % 2 === 0 ? 'disputed' : 'filed' }));
    const disputed = claims
      .filter((c) => c.status === 'disputed')
      .map((c) => c.id)
      .reverse();
    const pages = await allPages(company, '?status=disputed&limit=2');
    expect(pages.flat()).toEqual(disputed);
    expect(pages.map((p) => p.length)).toEqual([2, 1]);
  });

  it('filters by the current status, after a status change', async () => {
    const company = await ctx.newCompany();
    const [a, b] = await submitMany(company, 2);
    await ctx.app.inject({ method: 'PATCH', url: `/api/v1/claims/${a!.id}/status`, headers: company.auth, payload: { status: 'closed' } });
    expect((await page(company, '?status=closed')).data.map((c) => c.id)).toEqual([a!.id]);
    expect((await page(company, '?status=filed')).data.map((c) => c.id)).toEqual([b!.id]);
  });

  it('rejects an unknown status filter, a bad limit and a bad cursor with 422 naming the parameter', async () => {
    const company = await ctx.newCompany();
    for (const [query, field] of [
      ['?status=open', 'status'],
      ['?limit=0', 'limit'],
      ['?limit=101', 'limit'],
      ['?limit=ten', 'limit'],
      ['?cursor=not-a-cursor', 'cursor'],
      [`?cursor=${Buffer.from(`2026-01-01T00:00:00.000000Z|${'x'.repeat(36)}`).toString('base64url')}`, 'cursor'],
    ] as const) {
      const res = await get(company, `/api/v1/claims${query}`);
      expect(res.statusCode, query).toBe(422);
      const json = res.json();
      expect(Object.keys(json.errors), query).toEqual([field]);
      expect(json.message).toBe(json.errors[field][0]);
      expect(json.message, query).not.toMatch(/is invalid\.$/);
    }
  });

  it('accepts the largest limit, 100', async () => {
    const company = await ctx.newCompany();
    expect((await get(company, '/api/v1/claims?limit=100')).statusCode).toBe(200);
  });
});
