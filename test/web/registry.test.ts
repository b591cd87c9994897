import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { addDays, claimBody, createTestContext, type TestContext } from '../harness';
import { companyWithPeople, signedIn } from './web-client';

const newPlate = () => `W${randomBytes(4).toString('hex').toUpperCase().slice(0, 7)}`;

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
