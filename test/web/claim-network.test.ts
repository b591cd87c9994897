import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { addDays, claimBody, createTestContext, plate as newPlate, type TestContext } from '../harness';
import { companyWithPeople, signedIn } from './web-client';

const newPerson = (last = 'Žemaitė') => ({
  first_name: 'Eglė',
  last_name: last,
  date_of_birth: '1988-08-08',
  id_documents: [{ type: 'passport', number: `G${randomBytes(6).toString('hex')}` }],
});

describe("dashboard: a claim's incident, duplicate flag and network", () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(async () => ctx.close());

  it('shows the incident’s claims, the duplicate-claim flag, and the network as a picture with a table, naming no other person', async () => {
    const own = await companyWithPeople(ctx, 'Own');
    const other = await companyWithPeople(ctx, 'Other');
    const plate = newPlate();
    const person = newPerson();
    const day = addDays(ctx.deps.today(), -5);
    const post = async (auth: Record<string, string>, client: ReturnType<typeof newPerson>, vehicle: string, date: string) => {
      const res = await ctx.app.inject({
        method: 'POST',
        url: '/api/v1/claims',
        headers: auth,
        payload: { ...claimBody({ vehicle_registration: vehicle, claim_date: date }), client },
      });
      expect(res.statusCode, res.body).toBe(201);
      return res.json().data.id as string;
    };
    const id = await post(own.auth, person, plate, day);
    const web = await signedIn(ctx, own.member.email);

    const before = await web.get(`/claims/${id}`);
    expect(before.statusCode).toBe(200);
    expect(before.body).toContain('No other company has a claim of this incident.');
    expect(before.body).not.toContain('Possible duplicate claim');

    await post(other.auth, person, plate, addDays(day, 1)); // the same loss at another company
    const second = newPlate();
    await post(other.auth, newPerson('Stranger'), second, day); // unrelated: not shown
    await post(other.auth, newPerson('Ringmember'), plate, addDays(day, -100)); // the network, not the incident

    const page = await web.get(`/claims/${id}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Same incident at other companies');
    expect(page.body).toContain('2 companies have a claim of this incident, yours included.');
    expect(page.body).toContain('<strong>Possible duplicate claim:</strong> 1 other company has a claim');
    expect(page.body).toMatch(/<td data-label="Same">Plate and Person<\/td>\s*<td data-label="Company">Other[^<]*<\/td>/u);
    // The network: 2 persons, 1 plate, 3 claims, 2 companies; a picture and a table of the same claims.
    expect(page.body).toMatch(
      /<strong>2<\/strong> persons<\/li>\s*<li><strong>1<\/strong> vehicle<\/li>\s*<li><strong>3<\/strong> claims<\/li>/u,
    );
    expect(page.body).toContain('<svg viewBox="0 0 360');
    expect(page.body.match(/<line class="edge/gu)).toHaveLength(3);
    expect(page.body).toContain('<caption>Claims of the network, as drawn</caption>');
    expect(page.body).toContain('<th scope="row">This claim</th><td>This person</td>');
    expect(page.body).toContain('<th scope="row">Claim 2</th><td>Person 2</td>');
    const networkSection = page.body.slice(page.body.indexOf('id="network-h"'), page.body.indexOf('id="looked-h"'));
    expect(networkSection).not.toMatch(/Ringmember|Žemaitė|Eglė/u);
    expect(page.body).not.toContain('Stranger');

    // Opening the page recorded an incident and a network look-up, listed under "Our look-ups".
    const log = await web.get('/lookups');
    expect(log.body).toContain('Incident of a claim');
    expect(log.body).toContain('Network of a claim');
    expect((await web.get('/lookups?kind=network')).body.match(/data-label="When"/gu)).toHaveLength(2);
  });
});
