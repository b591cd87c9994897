import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { addDays, claimBody, createTestContext, plate as newPlate, type TestContext } from '../harness';
import { companyWithPeople, signedIn } from './web-client';

describe('dashboard: matches, indicators, who looked, our look-ups', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(async () => ctx.close());

  it("a claim's page shows the matches with their company and what matched, the indicators with reasons, and who looked", async () => {
    const own = await companyWithPeople(ctx, 'Own');
    const other = await companyWithPeople(ctx, 'Other');
    const plate = newPlate();
    const number = `D${randomBytes(6).toString('hex')}`;
    const person = { first_name: 'Eglė', last_name: 'Žemaitė', date_of_birth: '1988-08-08', id_documents: [{ type: 'passport', number }] };
    const mine = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims',
      headers: own.auth,
      payload: { ...claimBody({ vehicle_registration: plate, claim_date: addDays(ctx.deps.today(), -3) }), client: person },
    });
    const id = mine.json().data.id;
    await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims',
      headers: other.auth,
      payload: { ...claimBody({ vehicle_registration: plate, claim_date: addDays(ctx.deps.today(), -9) }), client: person },
    });
    await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims/search-by-plate',
      headers: other.auth,
      payload: { vehicle_registration: plate },
    });

    const web = await signedIn(ctx, own.member.email);
    const page = await web.get(`/claims/${id}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Matches in the registry');
    expect(page.body).toContain(other.name);
    expect(page.body).toContain('Plate and Person');
    expect(page.body).toContain('Plate with several companies');
    expect(page.body).toContain('The vehicle has claims from 2 companies');
    expect(page.body).toContain('Who looked at this claim');
    expect(page.body).toMatch(new RegExp(`<td data-label="Company">${other.name}</td>\\s*<td data-label="Kind">Plate search</td>`));
    expect(page.body).not.toContain(number);

    // Opening the page was a matches look-up of the person's company, listed under "Our look-ups".
    const list = await web.get('/lookups');
    expect(list.statusCode).toBe(200);
    expect(list.body).toContain('Matches of a claim');
    expect(list.body).toContain(`href="/claims/${id}"`);
  });

  it('"Our look-ups" lists only the company\'s own look-ups', async () => {
    const a = await companyWithPeople(ctx, 'A');
    const b = await companyWithPeople(ctx, 'B');
    const plate = newPlate();
    await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims/search-by-plate',
      headers: b.auth,
      payload: { vehicle_registration: plate, purpose: 'checking B' },
    });
    const web = await signedIn(ctx, a.member.email);
    const list = await web.get('/lookups');
    expect(list.body).toContain('No look-ups yet.');
    expect(list.body).not.toContain(plate);
    const webB = await signedIn(ctx, b.member.email);
    const listB = await webB.get('/lookups');
    expect(listB.body).toContain(plate);
    expect(listB.body).toContain('checking B');
  });
});

describe('dashboard: person search, purposes and the look-up log', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext({ APP_TIMEZONE: 'UTC' });
  });
  afterAll(async () => ctx.close());

  it('finds a person by date of birth and document, records the purpose and who looked; the heading shows the normalized plate', async () => {
    const own = await companyWithPeople(ctx, 'Own');
    const other = await companyWithPeople(ctx, 'Other');
    const number = `LT-D${randomBytes(5).toString('hex')}`;
    const client = { first_name: 'Eglė', last_name: 'Žemaitė', date_of_birth: '1988-08-08', id_documents: [{ type: 'passport', number }] };
    const plate = newPlate();
    await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: other.auth, payload: { ...claimBody(), client } });
    await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: own.auth, payload: claimBody({ vehicle_registration: plate }) });
    const web = await signedIn(ctx, own.member.email);
    await web.get('/search');
    const found = await web.post('/search/person', {
      date_of_birth: '1988-08-08',
      type: 'passport',
      number: number.toLowerCase(),
      purpose: 'Claim 2026/118',
    });
    expect(found.statusCode).toBe(200);
    expect(found.body).toContain('1 claim for the person born 1988-08-08');
    expect(found.body).toContain(`${other.name}</td>`);
    expect(found.body).not.toContain(number);
    const impossible = await web.post('/search/person', { date_of_birth: '1988-02-30', type: 'passport', number: 'X1' });
    expect(impossible.statusCode).toBe(422);
    expect(impossible.body).toContain('The date of birth is not a date in the calendar: February 1988 has 29 days.');

    await web.get('/search');
    const plateSearch = await web.post('/search', { plate: plate.toLowerCase().replace(/^(..)/u, '$1-'), purpose: 'Own check' });
    expect(plateSearch.body).toMatch(new RegExp(`1 claim for <span class="plate">${plate}</span>`, 'u'));

    // An API token's search, for "who".
    const api = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims/search-by-plate',
      headers: own.auth,
      payload: { vehicle_registration: plate },
    });
    expect(api.statusCode).toBe(200);
    const log = await web.get('/lookups');
    const rows = [...log.body.matchAll(/<tr>\s*<td class="nowrap" data-label="When">[\s\S]*?<\/tr>/gu)].map((m) => m[0]);
    expect(rows).toHaveLength(3);
    const cell = (row: string, label: string) => new RegExp(`data-label="${label}">([\\s\\S]*?)</td>`, 'u').exec(row)![1]!.trim();
    expect(cell(rows[0]!, 'Who')).toBe('API token “test token”');
    expect(cell(rows[1]!, 'Who')).toBe(own.member.email);
    expect(cell(rows[1]!, 'Purpose')).toBe('Own check');
    expect(cell(rows[1]!, 'Whose claims')).toContain('Only yours');
    expect(cell(rows[2]!, 'Kind')).toBe('Person search');
    expect(cell(rows[2]!, 'Purpose')).toBe('Claim 2026/118');
    expect(cell(rows[2]!, 'Whose claims')).toContain('Other companies’ (1)');

    const persons = await web.get('/lookups?kind=person_search');
    expect(persons.body.match(/data-label="When"/gu)).toHaveLength(1);
    const mineOnly = await web.get(`/lookups?who=user:${own.member.id}`);
    expect(mineOnly.body.match(/data-label="When"/gu)).toHaveLength(2);
    const today = ctx.deps.today();
    expect((await web.get(`/lookups?from=${today}&to=${today}`)).body.match(/data-label="When"/gu)).toHaveLength(3);
    expect((await web.get(`/lookups?to=${addDays(today, -1)}`)).body).toContain('No look-ups match this filter.');
  });
});
