import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { companyWithPeople, signedIn } from '../web/web-client';
import { addDays, claimBody, createTestContext, plate as newPlate, submitClaim, type Company, type TestContext } from '../harness';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/;

const get = (ctx: TestContext, company: Company, url: string) => ctx.app.inject({ method: 'GET', url, headers: company.auth });
const plateSearch = (ctx: TestContext, company: Company, payload: Record<string, unknown>) =>
  ctx.app.inject({ method: 'POST', url: '/api/v1/claims/search-by-plate', headers: company.auth, payload });

describe('look-up log: GET /api/v1/lookups and GET /api/v1/claims/{id}/lookups', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(async () => ctx.close());
  const today = () => ctx.deps.today();

  it('records every kind of cross-company read with its fields, newest first, only for the company that looked', async () => {
    const [owner, looker] = [await ctx.newCompany('Owner'), await ctx.newCompany('Looker')];
    const plate = newPlate();
    const claim = await submitClaim(ctx, owner, {
      vehicle_registration: ` ${plate.slice(0, 3)}-${plate.slice(3).toLowerCase()}`,
      claim_date: addDays(today(), -2),
    });
    const own = await submitClaim(ctx, looker, { vehicle_registration: plate, claim_date: addDays(today(), -1) });

    expect((await plateSearch(ctx, looker, { vehicle_registration: plate.toLowerCase(), purpose: 'Claim 2026-77 check' })).statusCode).toBe(
      200,
    );
    const person = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims/search-by-person',
      headers: looker.auth,
      payload: { date_of_birth: '1985-06-02', id_documents: [{ type: 'passport', number: 'NOBODY-KNOWN-1' }] },
    });
    expect(person.statusCode).toBe(200);
    expect((await get(ctx, looker, `/api/v1/claims/${own.id}/matches?purpose=${encodeURIComponent('new claim')}`)).statusCode).toBe(200);

    const res = await get(ctx, looker, '/api/v1/lookups');
    expect(res.statusCode, res.body).toBe(200);
    const { data, meta } = res.json();
    expect(meta).toEqual({ next_cursor: null });
    expect(data).toEqual([
      {
        id: expect.stringMatching(UUID),
        kind: 'matches',
        vehicle_registration: null,
        claim_id: own.id,
        result_count: 1,
        purpose: 'new claim',
        created_at: expect.stringMatching(RFC3339),
      },
      {
        id: expect.stringMatching(UUID),
        kind: 'person_search',
        vehicle_registration: null,
        claim_id: null,
        result_count: 0,
        purpose: null,
        created_at: expect.stringMatching(RFC3339),
      },
      {
        id: expect.stringMatching(UUID),
        kind: 'plate_search',
        vehicle_registration: plate,
        claim_id: null,
        result_count: 2,
        purpose: 'Claim 2026-77 check',
        created_at: expect.stringMatching(RFC3339),
      },
    ]);
    // The owner did not look at anything; it was told of the looker's claim on its plate (an alert).
    expect((await get(ctx, owner, '/api/v1/lookups')).json().data).toEqual([
      {
        id: expect.stringMatching(UUID),
        kind: 'alert',
        vehicle_registration: plate,
        claim_id: own.id,
        result_count: 1,
        purpose: null,
        created_at: expect.stringMatching(RFC3339),
      },
    ]);

    // The owner sees which companies' look-ups returned the claim: the plate search and the matches, no people.
    const who = await get(ctx, owner, `/api/v1/claims/${claim.id}/lookups`);
    expect(who.statusCode, who.body).toBe(200);
    expect(who.json()).toEqual({
      data: [
        { company_name: looker.name, kind: 'matches', created_at: expect.stringMatching(RFC3339) },
        { company_name: looker.name, kind: 'plate_search', created_at: expect.stringMatching(RFC3339) },
      ],
      meta: { next_cursor: null },
    });
  });

  it('who looked at a claim: exactly the look-ups that returned it, by plate, by person and through matches', async () => {
    const [owner, looker, other] = [await ctx.newCompany('Owner'), await ctx.newCompany('Looker'), await ctx.newCompany('Other')];
    const plate = newPlate();
    const passport = `P${randomBytes(6).toString('hex').toUpperCase()}`;
    const person = { date_of_birth: '1979-03-14', id_documents: [{ type: 'passport', number: passport }] };
    // Before the claim exists: a search of its plate returns nothing, so it did not look at it.
    expect((await plateSearch(ctx, looker, { vehicle_registration: plate, purpose: 'before' })).json().data).toEqual([]);
    const claim = await submitClaim(ctx, owner, { vehicle_registration: plate, claim_date: addDays(today(), -3) });
    const ofPerson = async (company: Company) => {
      const payload = claimBody({ vehicle_registration: newPlate() }, person);
      const res = await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload });
      expect(res.statusCode, res.body).toBe(201);
      return res.json().data;
    };
    const mine = await ofPerson(owner);
    // The person's claim at another company, on another plate: its matches return `mine` through the person only.
    const theirs = await ofPerson(looker);
    expect((await get(ctx, looker, `/api/v1/claims/${theirs.id}/matches`)).json().data.matches).toHaveLength(1);
    const byPerson = await ctx.app.inject({ method: 'POST', url: '/api/v1/claims/search-by-person', headers: other.auth, payload: person });
    expect(byPerson.json().data).toHaveLength(2);
    expect((await plateSearch(ctx, other, { vehicle_registration: plate })).json().data).toHaveLength(1);

    const whoLooked = async (id: string) => (await get(ctx, owner, `/api/v1/claims/${id}/lookups`)).json().data;
    expect(await whoLooked(claim.id)).toEqual([
      { company_name: other.name, kind: 'plate_search', created_at: expect.stringMatching(RFC3339) },
    ]);
    expect(await whoLooked(mine.id)).toEqual([
      { company_name: other.name, kind: 'person_search', created_at: expect.stringMatching(RFC3339) },
      { company_name: looker.name, kind: 'matches', created_at: expect.stringMatching(RFC3339) },
    ]);
  });

  it('plate searches answered together: each gets its own plate’s claims and its own entry, naming exactly those claims', async () => {
    const [owner, a, b] = [await ctx.newCompany('Owner'), await ctx.newCompany('A'), await ctx.newCompany('B')];
    const plates = [newPlate(), newPlate(), newPlate(), newPlate()];
    // Plate i has i claims (plate 0 none), newest first.
    const claims: { id: string }[][] = [];
    for (const [i, plate] of plates.entries()) {
      claims.push([]);
      for (let k = 0; k < i; k++) {
        claims[i]!.unshift(await submitClaim(ctx, owner, { vehicle_registration: plate, claim_date: addDays(today(), -10 + k) }));
      }
    }
    // 16 searches at once: all but the first wait for a batch in flight and run together.
    const asked = Array.from({ length: 16 }, (_, n) => ({ company: n % 2 ? a : b, plate: n % 4, purpose: `batch ${n}` }));
    const answers = await Promise.all(
      asked.map((q) => plateSearch(ctx, q.company, { vehicle_registration: plates[q.plate]!.toLowerCase(), purpose: q.purpose })),
    );
    for (const [n, res] of answers.entries()) {
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().data.map((c: { id: string }) => c.id)).toEqual(claims[asked[n]!.plate]!.map((c) => c.id));
    }
    for (const company of [a, b]) {
      const log = (await get(ctx, company, '/api/v1/lookups?limit=100')).json().data as {
        purpose: string;
        vehicle_registration: string;
        result_count: number;
      }[];
      const mine = asked.filter((q) => q.company === company);
      expect(log.map((l) => [l.purpose, l.vehicle_registration, l.result_count]).sort()).toEqual(
        mine.map((q) => [q.purpose, plates[q.plate], q.plate]).sort(),
      );
    }
    // Who looked at plate 3's newest claim: the 4 searches of plate 3, each once.
    expect(await get(ctx, owner, `/api/v1/claims/${claims[3]![0]!.id}/lookups`).then((r) => r.json().data)).toHaveLength(4);
    // They did run together: fewer transactions wrote the 16 entries than there were searches.
    const [written] = await ctx.deps.db.query<{ transactions: number }>(
      `SELECT count(DISTINCT xmin::text)::int AS transactions FROM lookups WHERE purpose LIKE 'batch %' AND company_id = ANY($1::uuid[])`,
      [[a.id, b.id]],
    );
    expect(written!.transactions).toBeLessThan(16);
  });

  it('a plate search with a purpose over 200 characters is a 422 naming purpose, and nothing is recorded', async () => {
    const c = await ctx.newCompany();
    const res = await plateSearch(ctx, c, { vehicle_registration: newPlate(), purpose: 'x'.repeat(201) });
    expect(res.statusCode).toBe(422);
    expect(res.json().errors).toEqual({ purpose: ['The purpose field must not be greater than 200 characters.'] });
    expect((await get(ctx, c, '/api/v1/lookups')).json().data).toEqual([]);
  });

  it('pages with a cursor, newest first, and rejects a cursor that is not one', async () => {
    const c = await ctx.newCompany();
    const plates = [newPlate(), newPlate(), newPlate(), newPlate(), newPlate()];
    for (const p of plates) expect((await plateSearch(ctx, c, { vehicle_registration: p })).statusCode).toBe(200);
    const seen: string[] = [];
    let url = '/api/v1/lookups?limit=2';
    for (let i = 0; i < 5; i++) {
      const page = (await get(ctx, c, url)).json();
      seen.push(...page.data.map((l: { vehicle_registration: string }) => l.vehicle_registration));
      if (!page.meta.next_cursor) break;
      url = `/api/v1/lookups?limit=2&cursor=${page.meta.next_cursor}`;
    }
    expect(seen).toEqual([...plates].reverse());
    const bad = await get(ctx, c, '/api/v1/lookups?cursor=nonsense');
    expect(bad.statusCode).toBe(422);
    expect(Object.keys(bad.json().errors)).toEqual(['cursor']);
  });

  it("claim look-ups: another company's claim id, an unknown id and a non-UUID are a 404", async () => {
    const [a, b] = [await ctx.newCompany('A'), await ctx.newCompany('B')];
    const theirs = await submitClaim(ctx, b, { vehicle_registration: newPlate() });
    await plateSearch(ctx, a, { vehicle_registration: theirs.vehicle_registration });
    for (const id of [theirs.id, '00000000-0000-4000-8000-000000000000', 'x']) {
      const res = await get(ctx, a, `/api/v1/claims/${id}/lookups`);
      expect(res.statusCode, id).toBe(404);
      expect(res.json()).toMatchObject({ message: 'Claim not found.', code: 'claim_not_found' });
    }
    // The owner, on the other hand, sees the look-up.
    expect((await get(ctx, b, `/api/v1/claims/${theirs.id}/lookups`)).json().data).toHaveLength(1);
  });

  it('claim look-ups page with a cursor', async () => {
    const [owner, looker] = [await ctx.newCompany('Owner'), await ctx.newCompany('Looker')];
    const claim = await submitClaim(ctx, owner, { vehicle_registration: newPlate() });
    for (let i = 0; i < 3; i++) await plateSearch(ctx, looker, { vehicle_registration: claim.vehicle_registration });
    const first = (await get(ctx, owner, `/api/v1/claims/${claim.id}/lookups?limit=2`)).json();
    expect(first.data).toHaveLength(2);
    const second = (await get(ctx, owner, `/api/v1/claims/${claim.id}/lookups?limit=2&cursor=${first.meta.next_cursor}`)).json();
    expect(second).toEqual({
      data: [{ company_name: looker.name, kind: 'plate_search', created_at: expect.stringMatching(RFC3339) }],
      meta: { next_cursor: null },
    });
  });

  it('the dashboard search is recorded too, with the person who searched', async () => {
    const c = await companyWithPeople(ctx);
    const plate = newPlate();
    const web = await signedIn(ctx, c.member.email);
    await web.get('/search');
    expect((await web.post('/search', { plate })).statusCode).toBe(200);
    const log = (await get(ctx, c, '/api/v1/lookups')).json().data;
    expect(log).toEqual([expect.objectContaining({ kind: 'plate_search', vehicle_registration: plate, result_count: 0 })]);
    const rows = await ctx.deps.db.query<{ user_id: string | null; token_id: string | null }>(
      'SELECT user_id, token_id FROM lookups WHERE id = $1',
      [log[0].id],
    );
    expect(rows).toEqual([{ user_id: c.member.id, token_id: null }]);
  });

  it('keeps a purpose exactly as written, quotes, braces, commas, backslashes and NULL included', async () => {
    const c = await ctx.newCompany();
    const purposes = ['He said "check", {again}', 'C:\\claims\\2026, row 7', 'NULL', '  ünïcödé ✓ '];
    for (const purpose of purposes) expect((await plateSearch(ctx, c, { vehicle_registration: newPlate(), purpose })).statusCode).toBe(200);
    const listed = (await get(ctx, c, '/api/v1/lookups')).json().data.map((l: { purpose: string }) => l.purpose);
    expect([...listed].sort()).toEqual(purposes.map((p) => p.trim()).sort());
  });

  it('every cursor-paged list refuses a limit outside 1-100 and a foreign cursor with a 422 naming the field', async () => {
    const c = await ctx.newCompany();
    const claim = await submitClaim(ctx, c, { vehicle_registration: newPlate() });
    for (const path of ['/api/v1/lookups', `/api/v1/claims/${claim.id}/lookups`, '/api/v1/imports']) {
      for (const [query, field] of [
        ['?limit=0', 'limit'],
        ['?limit=101', 'limit'],
        ['?limit=ten', 'limit'],
        ['?cursor=not-a-cursor', 'cursor'],
      ] as const) {
        const res = await get(ctx, c, `${path}${query}`);
        expect(res.statusCode, `${path}${query}`).toBe(422);
        expect(Object.keys(res.json().errors), `${path}${query}`).toEqual([field]);
      }
      expect((await get(ctx, c, `${path}?limit=100`)).statusCode, path).toBe(200);
    }
  });

  it('a purpose that is not text is a 422 naming purpose', async () => {
    const c = await ctx.newCompany();
    const res = await plateSearch(ctx, c, { vehicle_registration: newPlate(), purpose: 12 });
    expect(res.statusCode).toBe(422);
    expect(res.json().errors).toEqual({ purpose: ['The purpose field must be a string.'] });
  });
});
