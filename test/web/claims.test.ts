import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Principal } from '../../src/domain/principal';
import { claimBody, createTestContext, type TestContext } from '../harness';
import { companyWithPeople, signedIn } from './web-client';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ APP_TIMEZONE: 'UTC' });
});
afterAll(async () => ctx.close());

const principal = (c: { id: string; name: string }): Principal => ({ companyId: c.id, companyName: c.name, tokenId: null, userId: null });

function validForm(overrides: Record<string, string> = {}) {
  const body = claimBody();
  return {
    'client.first_name': 'Ona',
    'client.last_name': 'Petraitė',
    'client.date_of_birth': '1985-06-02',
    'client.id_documents.0.type': 'passport',
    'client.id_documents.0.number': body.client.id_documents[0]!.number,
    'client.id_documents.1.type': '',
    'client.id_documents.1.number': '',
    claim_date: ctx.deps.today(),
    vehicle_registration: body.vehicle_registration,
    claim_type: 'theft',
    amount: '1250.5',
    is_at_fault: 'false',
    status: 'filed',
    ...overrides,
  };
}

describe('entering a claim by hand', () => {
  it("stores it for the person's company with source assisted", async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.member.email);
    await web.get('/claims/new');
    const form = validForm();
    const res = await web.post('/claims', form);
    expect(res.statusCode).toBe(303);
    const id = /^\/claims\/([0-9a-f-]{36})\?saved=1$/u.exec(res.headers.location!)![1]!;
    const claim = await ctx.deps.claims.get(principal(c), id);
    expect(claim).toMatchObject({ source: 'assisted', amount: '1250.50', claim_type: 'theft', is_at_fault: false, status: 'filed' });
    const page = await web.get(res.headers.location!);
    expect(page.body).toContain('The claim was saved.');
    expect(page.body).not.toContain(form['client.id_documents.0.number']);
  });

  it('shows each domain error next to its field and never shows the document number again', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.member.email);
    await web.get('/claims/new');
    const form = validForm({
      'client.first_name': '',
      claim_date: '2999-01-01',
      amount: '12.345',
      'client.id_documents.1.type': 'national_id',
    });
    const res = await web.post('/claims', form);
    expect(res.statusCode).toBe(422);
    expect(res.body).toContain('The claim was not saved');
    expect(res.body).toMatch(/id="f-client-first_name-error"><span>The first name field is required\.<\/span>/u);
    expect(res.body).toMatch(/<input id="f-client-first_name"[^>]*aria-invalid="true"[^>]*aria-describedby="f-client-first_name-error"/u);
    expect(res.body).toMatch(/id="f-claim_date-error"><span>The claim date cannot be in the future\.<\/span>/u);
    expect(res.body).toMatch(/id="f-amount-error"><span>The amount must have at most 2 decimal places\.<\/span>/u);
    expect(res.body).toMatch(/id="f-client-id_documents-1-number-error"><span>The document number field is required\.<\/span>/u);
    expect(res.body).toContain('href="#f-client-first_name"');
    expect(res.body).not.toContain(form['client.id_documents.0.number']);
    expect(res.body).toContain(`value="${form.vehicle_registration}"`);
    expect(await ctx.deps.claims.list(principal(c), { limit: 10 })).toMatchObject({ data: [] });
  });
});

describe('dates on the claim form', () => {
  it('says that an impossible date does not exist; the API keeps its own message', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.member.email);
    const form = await web.get('/claims/new');
    expect(form.body).toMatch(/<input id="f-client-date_of_birth" name="client.date_of_birth" type="date"/u);
    expect(form.body).toMatch(/<input id="f-claim_date" name="claim_date" type="date"/u);
    const res = await web.post('/claims', validForm({ 'client.date_of_birth': '1990-02-30' }));
    expect(res.statusCode).toBe(422);
    expect(res.body).toContain('The date of birth 1990-02-30 does not exist: February 1990 has 28 days.');
    expect(res.body).not.toContain('in the format YYYY-MM-DD');
    const month = await web.post('/claims', validForm({ claim_date: '2026-13-01' }));
    expect(month.body).toContain('The claim date 2026-13-01 does not exist: there is no month 13.');
    // A value not written as a date keeps the format message.
    const format = await web.post('/claims', validForm({ 'client.date_of_birth': '02/03/1990' }));
    expect(format.body).toContain('The date of birth field must be a valid date in the format YYYY-MM-DD.');
    const api = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims',
      headers: { authorization: `Bearer ${c.token}` },
      payload: claimBody({ client: { ...claimBody().client, date_of_birth: '1990-02-30' } }),
    });
    expect(api.statusCode).toBe(422);
    expect(api.json().errors['client.date_of_birth']).toEqual(['The date of birth field must be a valid date in the format YYYY-MM-DD.']);
  });
});

describe('claims list and status', () => {
  it('pages newest first and filters by status', async () => {
    const c = await companyWithPeople(ctx);
    const ids: string[] = [];
    for (let i = 0; i < 27; i++)
      ids.push((await ctx.deps.claims.submit(principal(c), claimBody({ status: i % 2 ? 'settled' : 'filed' }))).id);
    const web = await signedIn(ctx, c.member.email);
    const first = await web.get('/claims');
    expect(first.body).toContain(ids[26]);
    expect(first.body).not.toContain(ids[0]);
    const next = /href="(\/claims\?cursor=[^"]+)" rel="next"/u.exec(first.body)![1]!.replace(/&amp;/gu, '&');
    const second = await web.get(next);
    expect(second.body).toContain(ids[0]);
    expect(second.body).not.toContain(ids[26]);
    const settled = await web.get('/claims?status=settled');
    expect(settled.body).toContain(ids[1]);
    expect(settled.body).not.toContain(ids[0]);
  });

  it('changes the status of an own claim and records the person who did it', async () => {
    const c = await companyWithPeople(ctx);
    const claim = await ctx.deps.claims.submit(principal(c), claimBody());
    const web = await signedIn(ctx, c.member.email);
    await web.get(`/claims/${claim.id}`);
    const res = await web.post(`/claims/${claim.id}/status`, { status: 'under_investigation' });
    expect(res.headers.location).toBe(`/claims/${claim.id}?updated=1`);
    expect((await ctx.deps.claims.get(principal(c), claim.id)).status).toBe('under_investigation');
    const history = await ctx.deps.store.claims.statusHistory(c.id, claim.id);
    expect(history).toEqual([
      { from_status: 'filed', to_status: 'under_investigation', changed_by_token_id: null, changed_by_user_id: c.member.id },
    ]);
    const bad = await web.post(`/claims/${claim.id}/status`, { status: 'lost' });
    expect(bad.statusCode).toBe(422);
  });
});

describe('search by plate', () => {
  it('uses the API rules: normalised plate, every company, the same window', async () => {
    const a = await companyWithPeople(ctx);
    const b = await companyWithPeople(ctx);
    const body = claimBody({ vehicle_registration: 'zz-77.1 q' });
    await ctx.deps.claims.submit(principal(a), body);
    await ctx.deps.claims.submit(principal(b), claimBody({ vehicle_registration: 'ZZ771Q' }));
    const web = await signedIn(ctx, b.member.email);
    const res = await web.get('/search?plate=zz+771q');
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('2 claims for');
    expect(res.body).toContain(a.name);
    expect(res.body).toContain(`${b.name} (yours)`);
    expect(res.body).not.toContain(body.client.id_documents[0]!.number);
    const invalid = await web.get('/search?plate=%21%21');
    expect(invalid.statusCode).toBe(422);
    expect(invalid.body).toContain('id="plate-error"');
  });
});

describe('favicon', () => {
  it('is named by every page and served, and /favicon.ico leads to it instead of a 404', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.member.email);
    const page = await web.get('/claims');
    const href = /<link rel="icon" href="([^"]+)" type="image\/svg\+xml">/u.exec(page.body)![1]!;
    const icon = await ctx.app.inject({ method: 'GET', url: href });
    expect(icon.statusCode).toBe(200);
    expect(icon.headers['content-type']).toContain('image/svg+xml');
    const ico = await ctx.app.inject({ method: 'GET', url: '/favicon.ico' });
    expect(ico.statusCode).toBe(301);
    expect(ico.headers.location).toBe(href);
  });
});

describe('overview', () => {
  it('shows claims per month of the last 12 months as a chart with a table, and counts by status', async () => {
    const c = await companyWithPeople(ctx);
    const today = ctx.deps.today();
    await ctx.deps.claims.submit(principal(c), claimBody({ claim_date: today, status: 'settled' }));
    await ctx.deps.claims.submit(principal(c), claimBody({ claim_date: today }));
    const web = await signedIn(ctx, c.member.email);
    const res = await web.get('/');
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('<svg viewBox=');
    expect(res.body).toContain('role="img"');
    expect(res.body.match(/<g class="bar">/gu)).toHaveLength(12);
    expect(res.body).toContain('2 claims in total');
    expect(res.body).toMatch(/<span class="stat-value">1<\/span>\s*<span class="stat-label">Settled<\/span>/u);
    expect(res.body).toMatch(/<span class="stat-value">1<\/span>\s*<span class="stat-label">Filed<\/span>/u);
    expect(res.body).toMatch(/<caption class="visually-hidden">Claims per month/u);
  });
});
