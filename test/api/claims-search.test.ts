import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { minusYears } from '../../src/domain/dates';
import { apiError, claimBody, createTestContext, type TestContext, addDays, type Company, submitClaim } from '../harness';
import { plate as newPlate } from '../import-helpers';

/** A plate no other test uses: letters and digits only, 8 characters. */

const search = (ctx: TestContext, company: Company, payload: unknown) =>
  ctx.app.inject({ method: 'POST', url: '/api/v1/claims/search-by-plate', headers: company.auth, payload: payload as object });

async function found(ctx: TestContext, company: Company, plate: string) {
  const res = await search(ctx, company, { vehicle_registration: plate });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

const ids = (result: { data: { id: string }[] }) => result.data.map((c) => c.id);

describe('POST /api/v1/claims/search-by-plate (default 3-year window)', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(async () => ctx.close());
  const today = () => ctx.deps.today();

  it('returns 200 with data and meta { total_claims, query_period "3 years" }', async () => {
    const company = await ctx.newCompany();
    const plate = newPlate();
    const claim = await submitClaim(ctx, company, { vehicle_registration: plate, claim_date: addDays(today(), -3) });
    const result = await found(ctx, company, plate);
    expect(result).toEqual({ data: [claim], meta: { total_claims: 1, query_period: '3 years' } });
  });

  it('finds claims of all companies, not only the caller’s', async () => {
    const [a, b, searcher] = [await ctx.newCompany('A'), await ctx.newCompany('B'), await ctx.newCompany('Searcher')];
    const plate = newPlate();
    const fromA = await submitClaim(ctx, a, { vehicle_registration: plate, claim_date: addDays(today(), -2) });
    const fromB = await submitClaim(ctx, b, { vehicle_registration: plate, claim_date: addDays(today(), -1) });
    const result = await found(ctx, searcher, plate);
    expect(ids(result)).toEqual([fromB.id, fromA.id]);
    expect(result.data.map((c: { company_name: string }) => c.company_name)).toEqual([b.name, a.name]);
    expect(result.meta.total_claims).toBe(2);
  });

  it('matches normalized forms: a plate sent with dots, dashes, spaces or lower case finds the same claims', async () => {
    const company = await ctx.newCompany();
    const plate = newPlate();
    const spelled = `${plate.slice(0, 2).toLowerCase()}-${plate.slice(2, 5)}.${plate.slice(5).toLowerCase()}`;
    const claim = await submitClaim(ctx, company, { vehicle_registration: spelled, claim_date: addDays(today(), -1) });
    for (const query of [
      plate,
      plate.toLowerCase(),
      ` ${plate.slice(0, 3)} ${plate.slice(3)} `,
      `${plate.slice(0, 4)}.${plate.slice(4)}`,
      spelled,
    ]) {
      expect(ids(await found(ctx, company, query)), query).toEqual([claim.id]);
    }
  });

  it('does not match a different plate that merely contains the query', async () => {
    const company = await ctx.newCompany();
    const plate = newPlate();
    await submitClaim(ctx, company, { vehicle_registration: `${plate}9`, claim_date: addDays(today(), -1) });
    expect(await found(ctx, company, plate)).toEqual({ data: [], meta: { total_claims: 0, query_period: '3 years' } });
  });

  it('orders by claim_date descending, then created_at descending', async () => {
    const company = await ctx.newCompany();
    const plate = newPlate();
    const olderFirst = await submitClaim(ctx, company, { vehicle_registration: plate, claim_date: addDays(today(), -20) });
    const newest = await submitClaim(ctx, company, { vehicle_registration: plate, claim_date: addDays(today(), -5) });
    const olderSecond = await submitClaim(ctx, company, { vehicle_registration: plate, claim_date: addDays(today(), -20) });
    const oldest = await submitClaim(ctx, company, { vehicle_registration: plate, claim_date: addDays(today(), -300) });
    const result = await found(ctx, company, plate);
    expect(ids(result)).toEqual([newest.id, olderSecond.id, olderFirst.id, oldest.id]);
    expect(result.meta.total_claims).toBe(4);
  });

  it('includes a claim dated exactly three years ago (inclusive boundary)', async () => {
    const company = await ctx.newCompany();
    const plate = newPlate();
    const claim = await submitClaim(ctx, company, { vehicle_registration: plate, claim_date: minusYears(today(), 3) });
    expect(ids(await found(ctx, company, plate))).toEqual([claim.id]);
  });

  it('returns whole claims without document numbers', async () => {
    const company = await ctx.newCompany();
    const plate = newPlate();
    const number = `Q${randomBytes(6).toString('hex')}`;
    await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims',
      headers: company.auth,
      payload: claimBody(
        { vehicle_registration: plate, claim_date: addDays(today(), -1) },
        { id_documents: [{ type: 'passport', number }] },
      ),
    });
    const res = await search(ctx, company, { vehicle_registration: plate });
    expect(res.json().data[0].client.id_documents).toEqual([{ type: 'passport' }]);
    expect(res.body.toLowerCase()).not.toContain(number.toLowerCase());
  });

  describe('validation: 422 on vehicle_registration', () => {
    it('rejects a missing plate', async () => {
      const company = await ctx.newCompany();
      const res = await search(ctx, company, {});
      expect(res.statusCode).toBe(422);
      expect(res.json()).toEqual(
        apiError('validation_failed', 'The vehicle registration field is required.', {
          vehicle_registration: ['The vehicle registration field is required.'],
        }),
      );
    });

    it('rejects an empty or blank plate', async () => {
      const company = await ctx.newCompany();
      for (const plate of ['', '   ']) {
        const res = await search(ctx, company, { vehicle_registration: plate });
        expect(res.statusCode, JSON.stringify(plate)).toBe(422);
        expect(res.json().errors).toEqual({ vehicle_registration: ['The vehicle registration field is required.'] });
      }
    });

    it('rejects more than 20 characters as sent', async () => {
      const company = await ctx.newCompany();
      const res = await search(ctx, company, { vehicle_registration: 'AB-12.34 56-78.90 123' });
      expect(res.statusCode).toBe(422);
      expect(res.json().errors).toEqual({
        vehicle_registration: ['The vehicle registration field must not be greater than 20 characters.'],
      });
    });

    it('accepts exactly 20 characters as sent', async () => {
      const company = await ctx.newCompany();
      expect((await search(ctx, company, { vehicle_registration: 'AB-12.34 56-78.90 12' })).statusCode).toBe(200);
    });

    it('rejects a plate that leaves no letters and digits, and a non-string', async () => {
      const company = await ctx.newCompany();
      const onlySeparators = await search(ctx, company, { vehicle_registration: '-. -' });
      expect(onlySeparators.statusCode).toBe(422);
      expect(Object.keys(onlySeparators.json().errors)).toEqual(['vehicle_registration']);
      const number = await search(ctx, company, { vehicle_registration: 12345 });
      expect(number.statusCode).toBe(422);
      expect(Object.keys(number.json().errors)).toEqual(['vehicle_registration']);
    });
  });
});

describe('POST /api/v1/claims/search-by-plate with SEARCH_HISTORY_YEARS=1', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext({ SEARCH_HISTORY_YEARS: '1' });
  });
  afterAll(async () => ctx.close());
  const today = () => ctx.deps.today();

  it('leaves out claims older than the window, keeps the boundary day, and says "1 year"', async () => {
    const company = await ctx.newCompany();
    const plate = newPlate();
    const recent = await submitClaim(ctx, company, { vehicle_registration: plate, claim_date: addDays(today(), -10) });
    const boundary = await submitClaim(ctx, company, { vehicle_registration: plate, claim_date: minusYears(today(), 1) });
    // Accepted on submission (within 3 years) but outside the 1-year search window.
    await submitClaim(ctx, company, { vehicle_registration: plate, claim_date: addDays(minusYears(today(), 1), -1) });
    await submitClaim(ctx, company, { vehicle_registration: plate, claim_date: addDays(minusYears(today(), 2), 0) });
    const result = await found(ctx, company, plate);
    expect(ids(result)).toEqual([recent.id, boundary.id]);
    expect(result.meta).toEqual({ total_claims: 2, query_period: '1 year' });
  });

  it('still reads an old claim by id: the window limits the search only', async () => {
    const company = await ctx.newCompany();
    const old = await submitClaim(ctx, company, { vehicle_registration: newPlate(), claim_date: minusYears(today(), 2) });
    const res = await ctx.app.inject({ method: 'GET', url: `/api/v1/claims/${old.id}`, headers: company.auth });
    expect(res.statusCode).toBe(200);
    expect(await found(ctx, company, old.vehicle_registration)).toMatchObject({ data: [], meta: { total_claims: 0 } });
  });
});
