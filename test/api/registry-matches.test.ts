import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { minusYears } from '../../src/domain/dates';
import { addDays, claimBody, createTestContext, type Company, type TestContext } from '../harness';
import { plate as newPlate } from '../import-helpers';

const newPerson = () => ({
  first_name: 'Rūta',
  last_name: 'Kazlauskienė',
  date_of_birth: '1979-04-11',
  id_documents: [{ type: 'national_id', number: `N${randomBytes(6).toString('hex').toUpperCase()}` }],
});
type Person = ReturnType<typeof newPerson>;

async function submit(ctx: TestContext, company: Company, person: Person, overrides: Record<string, unknown>) {
  const res = await ctx.app.inject({
    method: 'POST',
    url: '/api/v1/claims',
    headers: company.auth,
    payload: { ...claimBody(overrides), client: person },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().data as { id: string; client: { id: string }; company_name: string; vehicle_registration: string; claim_date: string };
}

const matches = (ctx: TestContext, company: Company, id: string, query = '') =>
  ctx.app.inject({ method: 'GET', url: `/api/v1/claims/${id}/matches${query}`, headers: company.auth });

describe('GET /api/v1/claims/{id}/matches', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(async () => ctx.close());
  const today = () => ctx.deps.today();

  it('lists the claims of all companies sharing the plate or the person, itself excluded, newest first, with matched_on', async () => {
    const [own, other, third] = [await ctx.newCompany('Own'), await ctx.newCompany('Other'), await ctx.newCompany('Third')];
    const plate = newPlate();
    const person = newPerson();
    const target = await submit(ctx, own, person, { vehicle_registration: plate, claim_date: addDays(today(), -10) });
    const samePlate = await submit(ctx, other, newPerson(), { vehicle_registration: plate, claim_date: addDays(today(), -40) });
    const samePerson = await submit(ctx, third, person, { vehicle_registration: newPlate(), claim_date: addDays(today(), -5) });
    const both = await submit(ctx, other, person, { vehicle_registration: plate, claim_date: addDays(today(), -100) });
    await submit(ctx, other, newPerson(), { vehicle_registration: newPlate(), claim_date: addDays(today(), -3) }); // unrelated

    const res = await matches(ctx, own, target.id);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(Object.keys(body.data).sort()).toEqual(['indicators', 'matches']);
    expect(body.data.matches.map((m: { id: string }) => m.id)).toEqual([samePerson.id, samePlate.id, both.id]);
    expect(body.data.matches.map((m: { matched_on: string[] }) => m.matched_on)).toEqual([
      ['client'],
      ['vehicle_registration'],
      ['vehicle_registration', 'client'],
    ]);
  });

  it("shows other companies' claims exactly as the plate search shows them, and no more", async () => {
    const [own, other] = [await ctx.newCompany('Own'), await ctx.newCompany('Other')];
    const plate = newPlate();
    const target = await submit(ctx, own, newPerson(), { vehicle_registration: plate, claim_date: addDays(today(), -10) });
    const theirs = await submit(ctx, other, newPerson(), { vehicle_registration: plate, claim_date: addDays(today(), -20) });
    const searched = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims/search-by-plate',
      headers: own.auth,
      payload: { vehicle_registration: plate },
    });
    const fromSearch = searched.json().data.find((c: { id: string }) => c.id === theirs.id);
    const { matched_on, ...fromMatches } = (await matches(ctx, own, target.id)).json().data.matches[0];
    expect(matched_on).toEqual(['vehicle_registration']);
    expect(fromMatches).toEqual(fromSearch);
    expect(fromMatches).toEqual(theirs);
  });

  it('is a 404 "Claim not found." for another company\'s claim, an unknown id and a non-UUID, and logs nothing then', async () => {
    const [own, other] = [await ctx.newCompany('Own'), await ctx.newCompany('Other')];
    const theirs = await submit(ctx, other, newPerson(), { vehicle_registration: newPlate() });
    for (const id of [theirs.id, '00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const res = await matches(ctx, own, id);
      expect(res.statusCode, id).toBe(404);
      expect(res.json()).toMatchObject({ message: 'Claim not found.', code: 'claim_not_found' });
    }
    const log = await ctx.app.inject({ method: 'GET', url: '/api/v1/lookups', headers: own.auth });
    expect(log.json().data).toEqual([]);
  });

  it('leaves out claims dated before the search window', async () => {
    const short = await createTestContext({ SEARCH_HISTORY_YEARS: '1' });
    try {
      const c = await short.newCompany();
      const plate = newPlate();
      const target = await submit(short, c, newPerson(), { vehicle_registration: plate, claim_date: addDays(short.deps.today(), -1) });
      const inside = await submit(short, c, newPerson(), { vehicle_registration: plate, claim_date: minusYears(short.deps.today(), 1) });
      await submit(short, c, newPerson(), { vehicle_registration: plate, claim_date: addDays(minusYears(short.deps.today(), 1), -1) });
      const res = await matches(short, c, target.id);
      expect(res.json().data.matches.map((m: { id: string }) => m.id)).toEqual([inside.id]);
    } finally {
      await short.close();
    }
  });

  it('rejects a purpose longer than 200 characters with a 422 naming purpose', async () => {
    const own = await ctx.newCompany();
    const target = await submit(ctx, own, newPerson(), { vehicle_registration: newPlate() });
    const res = await matches(ctx, own, target.id, `?purpose=${'x'.repeat(201)}`);
    expect(res.statusCode).toBe(422);
    expect(res.json().errors).toEqual({ purpose: ['The purpose field must not be greater than 200 characters.'] });
    expect((await matches(ctx, own, target.id, `?purpose=${'x'.repeat(200)}`)).statusCode).toBe(200);
  });

  describe("indicators (advisory; counted up to this claim's date, any company, this claim included)", () => {
    const names = (res: { json(): { data: { indicators: { name: string }[] } } }) => res.json().data.indicators.map((i) => i.name);

    it('repeat_claimant: 3 claims of the person in the 24 months up to the claim date (boundary included), not 2, not later ones', async () => {
      const [a, b] = [await ctx.newCompany('A'), await ctx.newCompany('B')];
      const person = newPerson();
      const claimDate = addDays(today(), -40);
      const target = await submit(ctx, a, person, { vehicle_registration: newPlate(), claim_date: claimDate });
      await submit(ctx, b, person, { vehicle_registration: newPlate(), claim_date: addDays(today(), -1) }); // after: not counted
      await submit(ctx, b, person, { vehicle_registration: newPlate(), claim_date: addDays(minusYears(claimDate, 2), -1) }); // just outside
      expect(names(await matches(ctx, a, target.id))).not.toContain('repeat_claimant');
      await submit(ctx, b, person, { vehicle_registration: newPlate(), claim_date: minusYears(claimDate, 2) }); // exactly 24 months: counted
      expect(names(await matches(ctx, a, target.id))).not.toContain('repeat_claimant');
      await submit(ctx, b, person, { vehicle_registration: newPlate(), claim_date: addDays(claimDate, -300) });
      const res = await matches(ctx, a, target.id);
      const flag = res.json().data.indicators.find((i: { name: string }) => i.name === 'repeat_claimant');
      expect(flag.reason).toBe(`The person has 3 claims dated in the 24 months up to ${claimDate} (3 or more), this one included.`);
    });

    it('plate_multi_company: claims on the plate from 2 or more companies in the 12 months up to the claim date', async () => {
      const [a, b, c] = [await ctx.newCompany('A'), await ctx.newCompany('B'), await ctx.newCompany('C')];
      const plate = newPlate();
      const claimDate = addDays(today(), -30);
      const target = await submit(ctx, a, newPerson(), { vehicle_registration: plate, claim_date: claimDate });
      await submit(ctx, a, newPerson(), { vehicle_registration: plate, claim_date: addDays(claimDate, -3) }); // same company
      await submit(ctx, b, newPerson(), { vehicle_registration: plate, claim_date: addDays(minusYears(claimDate, 1), -1) }); // outside
      await submit(ctx, c, newPerson(), { vehicle_registration: plate, claim_date: addDays(claimDate, 5) }); // after
      expect(names(await matches(ctx, a, target.id))).not.toContain('plate_multi_company');
      await submit(ctx, b, newPerson(), { vehicle_registration: plate, claim_date: minusYears(claimDate, 1) }); // boundary
      const flag = (await matches(ctx, a, target.id))
        .json()
        .data.indicators.find((i: { name: string }) => i.name === 'plate_multi_company');
      expect(flag.reason).toBe(`The vehicle has claims from 2 companies dated in the 12 months up to ${claimDate} (2 or more).`);
    });

    it('early_claim: dated within 30 days after the person was first recorded', async () => {
      const a = await ctx.newCompany('A');
      const person = newPerson();
      const first = await submit(ctx, a, person, { vehicle_registration: newPlate(), claim_date: addDays(today(), -100) });
      // The person was recorded today; move that back so that the claim dates fall around it.
      const since = addDays(today(), -60);
      await ctx.deps.db.query(`UPDATE clients SET created_at = ($2::date + time '12:00') AT TIME ZONE 'UTC' WHERE id = $1`, [
        first.client.id,
        since,
      ]);
      const before = first; // dated before the person was recorded: not early
      const atDay30 = await submit(ctx, a, person, { vehicle_registration: newPlate(), claim_date: addDays(since, 30) });
      const atDay31 = await submit(ctx, a, person, { vehicle_registration: newPlate(), claim_date: addDays(since, 31) });
      expect(names(await matches(ctx, a, before.id))).not.toContain('early_claim');
      expect(names(await matches(ctx, a, atDay31.id))).not.toContain('early_claim');
      const flag = (await matches(ctx, a, atDay30.id)).json().data.indicators.find((i: { name: string }) => i.name === 'early_claim');
      expect(flag.reason).toBe(
        `The claim is dated 30 days after the person was first recorded in the registry on ${since} (within 30 days).`,
      );
    });

    it('none applies: an empty list (never a rejection)', async () => {
      const a = await ctx.newCompany('A');
      const person = newPerson();
      await submit(ctx, a, person, { vehicle_registration: newPlate(), claim_date: addDays(today(), -200) });
      const res = await matches(
        ctx,
        a,
        (await submit(ctx, a, person, { vehicle_registration: newPlate(), claim_date: addDays(today(), -150) })).id,
      );
      expect(res.statusCode).toBe(200);
      expect(res.json().data.indicators).toEqual([]);
    });
  });
});
