import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { minusYears } from '../../src/domain/dates';
import { addDays, claimBody, createTestContext, plate as newPlate, type Company, type TestContext } from '../harness';
import { csv, postImport, validRow } from '../import-helpers';

/**
 * Incidents and networks (DECISIONS, "Incidents and networks"): GET /claims/{id}/incident, the
 * duplicate_claim and network indicators of matches, same_incident on match alerts, and
 * GET /claims/{id}/network, each a look-up of its own kind.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx?.close());

const today = () => ctx.deps.today();
const D = () => addDays(today(), -20);
const newPerson = () => ({
  first_name: 'Jonas',
  last_name: 'Jonaitis',
  date_of_birth: '1981-02-03',
  id_documents: [{ type: 'national_id', number: `I${randomBytes(6).toString('hex').toUpperCase()}` }],
});
type Person = ReturnType<typeof newPerson>;
type Stored = { id: string; client: { id: string }; vehicle_registration: string; claim_date: string; company_name: string };

async function submit(company: Company, person: Person, plate: string, claimDate: string): Promise<Stored> {
  const res = await ctx.app.inject({
    method: 'POST',
    url: '/api/v1/claims',
    headers: company.auth,
    payload: { ...claimBody({ vehicle_registration: plate, claim_date: claimDate }), client: person },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().data as Stored;
}

const get = (company: Company, url: string) => ctx.app.inject({ method: 'GET', url, headers: company.auth });
async function incident(company: Company, id: string, query = '') {
  const res = await get(company, `/api/v1/claims/${id}/incident${query}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data as { claims: (Stored & { matched_on: string[] })[]; companies: number };
}
async function network(company: Company, id: string, query = '') {
  const res = await get(company, `/api/v1/claims/${id}/network${query}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data as {
    persons: number;
    plates: number;
    claims: number;
    companies: number;
    edges: { claim_id: string; vehicle_registration: string; client_id: string }[];
  };
}
async function indicators(company: Company, id: string) {
  const res = await get(company, `/api/v1/claims/${id}/matches`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data.indicators as { name: string; reason: string }[];
}
/** The company's look-ups, the alerts it was told left out (each is a look-up entry too). */
const lookupsOf = async (company: Company) =>
  (
    (await get(company, '/api/v1/lookups')).json().data as {
      kind: string;
      claim_id: string;
      result_count: number;
      purpose: string | null;
    }[]
  ).filter((l) => l.kind !== 'alert');
/** Which companies' look-ups returned the claim (alerts left out). */
const seenBy = async (company: Company, claimId: string) =>
  ((await get(company, `/api/v1/claims/${claimId}/lookups`)).json().data as { company_name: string; kind: string }[]).filter(
    (l) => l.kind !== 'alert',
  );

describe('GET /api/v1/claims/{id}/incident', () => {
  it('lists the other companies’ claims dated at most 1 day from the claim, both ways, oldest first; 2 days apart is not one incident', async () => {
    const [own, other, third] = [await ctx.newCompany('Own'), await ctx.newCompany('Other'), await ctx.newCompany('Third')];
    const plate = newPlate();
    const target = await submit(own, newPerson(), plate, D());
    const dayAfter = await submit(other, newPerson(), plate, addDays(D(), 1));
    const dayBefore = await submit(third, newPerson(), plate, addDays(D(), -1));
    const sameDay = await submit(other, newPerson(), plate, D());
    await submit(other, newPerson(), plate, addDays(D(), 2));
    await submit(third, newPerson(), plate, addDays(D(), -2));

    const found = await incident(own, target.id);
    expect(found.claims.map((c) => c.id)).toEqual([dayBefore.id, sameDay.id, dayAfter.id]);
    expect(found.companies).toBe(3);
  });

  it('never counts a claim of the same company, and answers companies 1 when there is no incident', async () => {
    const [own, other] = [await ctx.newCompany('Own'), await ctx.newCompany('Other')];
    const plate = newPlate();
    const person = newPerson();
    const target = await submit(own, person, plate, D());
    await submit(own, person, plate, D());
    await submit(own, newPerson(), plate, addDays(D(), 1));
    await submit(other, newPerson(), newPlate(), D()); // unrelated
    expect(await incident(own, target.id)).toEqual({ claims: [], companies: 1 });
  });

  it('pairs on the person alone and on the plate alone (matched_on), shown as a plate search shows them', async () => {
    const [own, other, third] = [await ctx.newCompany('Own'), await ctx.newCompany('Other'), await ctx.newCompany('Third')];
    const plate = newPlate();
    const person = newPerson();
    const target = await submit(own, person, plate, D());
    const personOnly = await submit(other, person, newPlate(), D());
    const plateOnly = await submit(third, newPerson(), plate, addDays(D(), 1));
    const found = await incident(own, target.id);
    expect(found.claims.map((c) => [c.id, c.matched_on])).toEqual([
      [personOnly.id, ['client']],
      [plateOnly.id, ['vehicle_registration']],
    ]);
    const searched = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims/search-by-plate',
      headers: own.auth,
      payload: { vehicle_registration: plate },
    });
    const { matched_on: _m, ...shown } = found.claims[1]!;
    expect(shown).toEqual(searched.json().data.find((c: { id: string }) => c.id === plateOnly.id));
  });

  it('counts only claims that pair with this one: no chain through a third claim', async () => {
    const [own, other, third] = [await ctx.newCompany('Own'), await ctx.newCompany('Other'), await ctx.newCompany('Third')];
    const plate = newPlate();
    const middlePerson = newPerson();
    const target = await submit(own, newPerson(), plate, D());
    const middle = await submit(other, middlePerson, plate, D());
    await submit(third, middlePerson, newPlate(), D()); // pairs with `middle` (same person), not with the target
    const found = await incident(own, target.id);
    expect(found.claims.map((c) => c.id)).toEqual([middle.id]);
    expect(found.companies).toBe(2);
  });

  it('leaves out claims dated before the search window', async () => {
    const short = await createTestContext({ SEARCH_HISTORY_YEARS: '1' });
    try {
      const [own, other] = [await short.newCompany('Own'), await short.newCompany('Other')];
      const edge = minusYears(short.deps.today(), 1);
      const plate = newPlate();
      const post = async (c: Company, date: string) => {
        const res = await short.app.inject({
          method: 'POST',
          url: '/api/v1/claims',
          headers: c.auth,
          payload: claimBody({ vehicle_registration: plate, claim_date: date }),
        });
        expect(res.statusCode, res.body).toBe(201);
        return res.json().data.id as string;
      };
      const target = await post(own, edge);
      const inside = await post(other, addDays(edge, 1));
      await post(other, addDays(edge, -1));
      const res = await short.app.inject({ method: 'GET', url: `/api/v1/claims/${target}/incident`, headers: own.auth });
      expect(res.json().data.claims.map((c: { id: string }) => c.id)).toEqual([inside]);
    } finally {
      await short.close();
    }
  });

  it("is a 404 for another company's claim, an unknown id and a non-UUID, and logs nothing then", async () => {
    const [own, other] = [await ctx.newCompany('Own'), await ctx.newCompany('Other')];
    const theirs = await submit(other, newPerson(), newPlate(), D());
    for (const id of [theirs.id, '00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      for (const what of ['incident', 'network']) {
        const res = await get(own, `/api/v1/claims/${id}/${what}`);
        expect(res.statusCode, `${what} ${id}`).toBe(404);
        expect(res.json()).toMatchObject({ message: 'Claim not found.', code: 'claim_not_found' });
      }
    }
    expect(await lookupsOf(own)).toEqual([]);
  });

  it('is a look-up of kind incident with its purpose and result count, which the other claim’s owner sees', async () => {
    const [own, other] = [await ctx.newCompany('Own'), await ctx.newCompany('Told')];
    const plate = newPlate();
    const target = await submit(own, newPerson(), plate, D());
    const theirs = await submit(other, newPerson(), plate, addDays(D(), 1));
    await incident(own, target.id, '?purpose=Claim%202026-7%20check');
    expect(await lookupsOf(own)).toEqual([
      expect.objectContaining({
        kind: 'incident',
        claim_id: target.id,
        result_count: 1,
        purpose: 'Claim 2026-7 check',
        vehicle_registration: null,
      }),
    ]);
    const seen = await seenBy(other, theirs.id);
    expect(seen).toEqual([expect.objectContaining({ company_name: own.name, kind: 'incident' })]);
    const long = await get(own, `/api/v1/claims/${target.id}/incident?purpose=${'x'.repeat(201)}`);
    expect(long.statusCode).toBe(422);
    expect(long.json().errors).toEqual({ purpose: ['The purpose field must not be greater than 200 characters.'] });
  });
});

describe('duplicate_claim (matches indicator) and same_incident (match alerts)', () => {
  const names = (list: { name: string }[]) => list.map((i) => i.name);

  it('duplicate_claim needs another company, the same person AND the same plate, dated at most 1 day apart', async () => {
    const [own, other, third] = [await ctx.newCompany('Own'), await ctx.newCompany('Other'), await ctx.newCompany('Third')];
    const person = newPerson();
    const plate = newPlate();
    const target = await submit(own, person, plate, D());
    await submit(own, person, plate, D()); // same company
    await submit(other, person, newPlate(), D()); // person only
    await submit(other, newPerson(), plate, D()); // plate only
    await submit(other, person, plate, addDays(D(), 2)); // two days apart
    await submit(third, person, plate, addDays(D(), -2));
    expect(names(await indicators(own, target.id))).not.toContain('duplicate_claim');

    await submit(other, person, plate, addDays(D(), 1));
    const after = await indicators(own, target.id);
    expect(after).toContainEqual({
      name: 'duplicate_claim',
      reason: '1 other company has a claim of the same person on the same vehicle dated at most 1 day from this one.',
    });
    await submit(third, person, plate, addDays(D(), -1));
    expect((await indicators(own, target.id)).find((i) => i.name === 'duplicate_claim')?.reason).toBe(
      '2 other companies have claims of the same person on the same vehicle dated at most 1 day from this one.',
    );
  });

  it('a match alert says same_incident true when the claims are at most 1 day apart, either way, and false otherwise', async () => {
    const [own, other] = [await ctx.newCompany('Own'), await ctx.newCompany('Other')];
    const plate = newPlate();
    const mine = await submit(own, newPerson(), plate, D());
    const later = await submit(other, newPerson(), plate, addDays(D(), 1));
    const earlier = await submit(other, newPerson(), plate, addDays(D(), -1));
    const far = await submit(other, newPerson(), plate, addDays(D(), 2));
    const farBefore = await submit(other, newPerson(), plate, addDays(D(), -2));
    const alerts = (await get(own, `/api/v1/alerts?claim_id=${mine.id}`)).json().data as {
      matched_claim: { id: string };
      same_incident: boolean;
    }[];
    const byClaim = Object.fromEntries(alerts.map((a) => [a.matched_claim.id, a.same_incident]));
    expect(byClaim).toEqual({ [later.id]: true, [earlier.id]: true, [far.id]: false, [farBefore.id]: false });
    // The other way round: the earlier company is told of a claim stored after its own.
    const theirs = (await get(other, `/api/v1/alerts`)).json().data as { claim_id: string; same_incident: boolean }[];
    expect(theirs).toEqual([]);
    const last = await submit(own, newPerson(), plate, addDays(D(), 3));
    const told = (await get(other, `/api/v1/alerts`)).json().data as { claim_id: string; same_incident: boolean }[];
    const toldBy = Object.fromEntries(told.map((a) => [a.claim_id, a.same_incident]));
    expect(told.every((a) => (a as unknown as { matched_claim: { id: string } }).matched_claim.id === last.id)).toBe(true);
    expect(toldBy).toEqual({ [later.id]: false, [earlier.id]: false, [far.id]: true, [farBefore.id]: false });
  });

  it('an import’s match alerts carry same_incident too', async () => {
    const [own, other] = [await ctx.newCompany('Own'), await ctx.newCompany('Importer')];
    const plate = newPlate();
    const mine = await submit(own, newPerson(), plate, D());
    const res = await postImport(
      ctx.app,
      other.auth,
      csv([
        validRow({ vehicle_registration: plate, claim_date: addDays(D(), -1) }),
        validRow({ vehicle_registration: plate, claim_date: addDays(D(), 5) }),
      ]),
    );
    expect(res.statusCode, res.body).toBe(200);
    const alerts = (await get(own, `/api/v1/alerts?claim_id=${mine.id}`)).json().data as {
      matched_claim: { claim_date: string };
      same_incident: boolean;
    }[];
    expect(alerts.map((a) => [a.matched_claim.claim_date, a.same_incident]).sort()).toEqual([
      [addDays(D(), -1), true],
      [addDays(D(), 5), false],
    ]);
  });
});

describe('GET /api/v1/claims/{id}/network and the network indicator', () => {
  it('counts the persons, plates, claims and companies two steps away on a hand-built graph; a third step is not counted', async () => {
    const [own, other, third] = [await ctx.newCompany('Own'), await ctx.newCompany('Other'), await ctx.newCompany('Third')];
    const [P0, P1, P2, P3] = [newPerson(), newPerson(), newPerson(), newPerson()]; // persons
    const [V0, V1, V2, V3] = [newPlate(), newPlate(), newPlate(), newPlate()];
    const target = await submit(own, P0, V0, D());
    // Step two: the claims on the target's plate or of its person, and their persons and plates.
    const a = await submit(other, P1, V0, addDays(D(), -100));
    const b = await submit(third, P2, V0, addDays(D(), -200));
    const c = await submit(own, P0, V1, addDays(D(), -300));
    const d = await submit(other, P0, V2, addDays(D(), -400));
    // A third step: the other claims of P1 and of V1 reach V3 and P3, which are not counted.
    await submit(third, P1, V3, addDays(D(), -10));
    await submit(third, P3, V1, addDays(D(), -10));

    const net = await network(own, target.id);
    expect({ ...net, edges: undefined }).toEqual({ persons: 3, plates: 3, claims: 5, companies: 3, edges: undefined });
    expect(net.edges).toEqual([
      { claim_id: target.id, vehicle_registration: V0, client_id: target.client.id },
      { claim_id: a.id, vehicle_registration: V0, client_id: a.client.id },
      { claim_id: b.id, vehicle_registration: V0, client_id: b.client.id },
      { claim_id: c.id, vehicle_registration: V1, client_id: target.client.id },
      { claim_id: d.id, vehicle_registration: V2, client_id: target.client.id },
    ]);
    expect(net.edges.every((e) => Object.keys(e).length === 3)).toBe(true);
    expect(names(await indicators(own, target.id))).not.toContain('network');
  });

  const names = (list: { name: string }[]) => list.map((i) => i.name);

  it('network indicator: more than 10 persons (11, not 10) or more than 10 plates, its reason giving both counts', async () => {
    const [own, other] = [await ctx.newCompany('Own'), await ctx.newCompany('Other')];
    const plate = newPlate();
    const target = await submit(own, newPerson(), plate, D());
    for (let i = 0; i < 9; i++) await submit(other, newPerson(), plate, addDays(D(), -i - 1));
    expect((await network(own, target.id)).persons).toBe(10);
    expect(names(await indicators(own, target.id))).not.toContain('network');
    await submit(other, newPerson(), plate, addDays(D(), -30));
    expect(await indicators(own, target.id)).toContainEqual({
      name: 'network',
      reason: 'Within two steps of this claim there are 11 persons and 1 vehicle (more than 10 persons or vehicles).',
    });

    const person = newPerson();
    const second = await submit(own, person, newPlate(), D());
    for (let i = 0; i < 9; i++) await submit(other, person, newPlate(), addDays(D(), -i - 1));
    expect(names(await indicators(own, second.id))).not.toContain('network');
    await submit(other, person, newPlate(), addDays(D(), -30));
    expect((await network(own, second.id)).plates).toBe(11);
    expect(names(await indicators(own, second.id))).toContain('network');
  });

  it('lists at most 500 edges, the claim itself first, and never cuts the counts; the look-up counts every claim', async () => {
    const [own, other] = [await ctx.newCompany('Own'), await ctx.newCompany('Busy')];
    const plate = newPlate();
    const target = await submit(own, newPerson(), plate, D());
    const rows = Array.from({ length: 505 }, (_, i) => validRow({ vehicle_registration: plate, claim_date: addDays(D(), -(i % 300) - 1) }));
    const res = await postImport(ctx.app, other.auth, csv(rows));
    expect(res.statusCode, res.body).toBe(200);
    const net = await network(own, target.id, '?purpose=Ring%20review');
    expect(net.edges).toHaveLength(500);
    expect(net.edges[0]!.claim_id).toBe(target.id);
    expect(new Set(net.edges.map((e) => e.claim_id)).size).toBe(500);
    expect({ persons: net.persons, plates: net.plates, claims: net.claims, companies: net.companies }).toEqual({
      persons: 506,
      plates: 1,
      claims: 506,
      companies: 2,
    });
    expect(await lookupsOf(own)).toEqual([
      expect.objectContaining({ kind: 'network', claim_id: target.id, result_count: 506, purpose: 'Ring review' }),
    ]);
  });

  it('keeps tenants apart: another company gets a 404 for the claim, and the owner of a reached claim sees the look-up', async () => {
    const [own, other] = [await ctx.newCompany('Own'), await ctx.newCompany('Other')];
    const person = newPerson();
    const target = await submit(own, person, newPlate(), D());
    const theirs = await submit(other, person, newPlate(), addDays(D(), -50));
    expect((await get(other, `/api/v1/claims/${target.id}/network`)).statusCode).toBe(404);
    expect(await lookupsOf(other)).toEqual([]);
    const net = await network(own, target.id);
    expect(net.edges.map((e) => e.claim_id)).toEqual([target.id, theirs.id]);
    expect(await lookupsOf(own)).toEqual([expect.objectContaining({ kind: 'network', claim_id: target.id, result_count: 2 })]);
    const seen = await seenBy(other, theirs.id);
    expect(seen).toEqual([expect.objectContaining({ company_name: own.name, kind: 'network' })]);
  });
});
