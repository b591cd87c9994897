import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { claimBody, companyPrincipal, createTestContext, type TestContext } from '../harness';
import { companyWithPeople, signedIn, validClaimForm } from './web-client';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ APP_TIMEZONE: 'UTC' });
});
afterAll(async () => ctx.close());

const validForm = (overrides: Record<string, string> = {}) => validClaimForm(ctx.deps.today(), overrides);

describe('entering a claim by hand', () => {
  it("stores it for the person's company with source assisted", async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.member.email);
    await web.get('/claims/new');
    const form = validForm();
    const res = await web.post('/claims', form);
    expect(res.statusCode).toBe(303);
    const id = /^\/claims\/([0-9a-f-]{36})\?saved=1$/u.exec(res.headers.location!)![1]!;
    const claim = await ctx.deps.claims.get(companyPrincipal(c), id);
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
    expect(await ctx.deps.claims.list(companyPrincipal(c), { limit: 10 })).toMatchObject({ data: [] });
  });
});

describe('dates on the claim form', () => {
  it('says that an impossible date is not in the calendar, as the API does', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.member.email);
    const form = await web.get('/claims/new');
    expect(form.body).toMatch(/<input id="f-client-date_of_birth" name="client.date_of_birth" type="date"/u);
    expect(form.body).toMatch(/<input id="f-claim_date" name="claim_date" type="date"/u);
    const res = await web.post('/claims', validForm({ 'client.date_of_birth': '1990-02-30' }));
    expect(res.statusCode).toBe(422);
    expect(res.body).toContain('The date of birth is not a date in the calendar: February 1990 has 28 days.');
    expect(res.body).not.toContain('in the format YYYY-MM-DD');
    const month = await web.post('/claims', validForm({ claim_date: '2026-13-01' }));
    expect(month.body).toContain('The claim date is not a date in the calendar: there is no month 13.');
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
    expect(api.json().errors['client.date_of_birth']).toEqual([
      'The date of birth is not a date in the calendar: February 1990 has 28 days.',
    ]);
  });
});

describe('claims list and status', () => {
  it('sorts by claim date, newest first, or by registration time; pages forward, back, to the last and by number', async () => {
    const c = await companyWithPeople(ctx);
    const today = ctx.deps.today();
    const day = (n: number) => new Date(Date.parse(`${today}T00:00:00Z`) - n * 86_400_000).toISOString().slice(0, 10);
    // Registered in one order, dated in another: claim i is i days old, registered newest last.
    const ids: string[] = [];
    for (let i = 0; i < 60; i++) ids.push((await ctx.deps.claims.submit(companyPrincipal(c), claimBody({ claim_date: day(59 - i) }))).id);
    const web = await signedIn(ctx, c.member.email);
    const idsOn = (html: string) => [...html.matchAll(/href="\/claims\/([0-9a-f-]{36})"/gu)].map((m) => m[1]);
    const link = (html: string, name: string) =>
      [...html.matchAll(/<a href="([^"]+)" aria-label="([^"]+)"/gu)].find((m) => m[2] === name)?.[1]?.replace(/&amp;/gu, '&');
    const first = await web.get('/claims');
    expect(first.body).toContain('<strong>60</strong> claims');
    expect(first.body).toContain('Page 1 of 3');
    // By claim date: the newest claim date first (the last registered here).
    expect(idsOn(first.body)).toEqual(ids.slice(35).reverse());
    const second = await web.get(link(first.body, 'Next page')!);
    expect(idsOn(second.body)).toEqual(ids.slice(10, 35).reverse());
    expect(second.body).toContain('Page 2 of 3');
    const last = await web.get(link(first.body, 'Last page, 3')!);
    expect(idsOn(last.body)).toEqual(ids.slice(0, 10).reverse());
    const jumped = await web.get(link(first.body, 'Page 3')!);
    expect(idsOn(jumped.body)).toEqual(ids.slice(0, 10).reverse());
    const back = await web.get(link(last.body, 'Previous page')!);
    expect(idsOn(back.body)).toEqual(ids.slice(10, 35).reverse());
    const backTwo = await web.get(link(last.body, 'Page 1')!);
    expect(idsOn(backTwo.body)).toEqual(ids.slice(35).reverse());

    // Claim dates against registration: make the oldest-dated claim the newest registered.
    const late = await ctx.deps.claims.submit(companyPrincipal(c), claimBody({ claim_date: day(100) }));
    const byDate = idsOn((await web.get('/claims')).body);
    expect(byDate).not.toContain(late.id);
    const byRegistration = idsOn((await web.get('/claims?sort=registered')).body);
    expect(byRegistration[0]).toBe(late.id);
  });

  it('filters by status, plate, client name, claim dates and source, combined and kept in every link, with the total', async () => {
    const c = await companyWithPeople(ctx);
    const today = ctx.deps.today();
    const client = (first_name: string, last_name: string) => ({ ...claimBody().client, first_name, last_name });
    const mk = (o: Parameters<typeof claimBody>[0], source?: 'api' | 'assisted') =>
      ctx.deps.claims.submit(companyPrincipal(c), claimBody(o), source);
    const a = await mk({ client: client('Ona', 'Petraitė'), vehicle_registration: 'FLT-001', status: 'settled' });
    const b = await mk({ client: client('Jonas', 'Jonaitis'), vehicle_registration: 'FLT002', status: 'settled' }, 'assisted');
    const d = await mk({ client: client('Ona', 'Jonaitytė'), vehicle_registration: 'ZZZ999', claim_date: '2025-01-15' });
    const other = await companyWithPeople(ctx);
    await ctx.deps.claims.submit(companyPrincipal(other), claimBody({ client: client('Ona', 'Petraitė'), vehicle_registration: 'FLT001' }));
    const web = await signedIn(ctx, c.member.email);
    const ids = async (qs: string) => {
      const res = await web.get(`/claims?${qs}`);
      expect(res.statusCode, qs).toBe(200);
      return { ids: [...res.body.matchAll(/href="\/claims\/([0-9a-f-]{36})"/gu)].map((m) => m[1]).sort(), body: res.body };
    };
    expect((await ids('plate=flt')).ids).toEqual([a.id, b.id].sort());
    expect((await ids('plate=flt-001')).ids).toEqual([a.id]);
    expect((await ids('name=ona')).ids).toEqual([a.id, d.id].sort());
    expect((await ids('name=ona+jon')).ids).toEqual([d.id]);
    expect((await ids('name=PETR')).ids).toEqual([a.id]);
    expect((await ids('status=settled&source=assisted')).ids).toEqual([b.id]);
    expect((await ids(`from=2025-01-01&to=2025-01-31`)).ids).toEqual([d.id]);
    expect((await ids(`to=${today}&plate=flt&status=settled`)).ids.length).toBe(2);
    const narrowed = await ids('plate=flt&status=settled');
    expect(narrowed.body).toContain('<strong>2</strong> claims match the filter');
    expect(narrowed.body).toContain('value="flt"');
    expect(narrowed.body).toContain('href="/claims/export.csv?status=settled&amp;plate=flt"');
    // LIKE's wildcards are taken literally.
    expect((await ids('name=%25')).ids).toEqual([]);
    const bad = await web.get('/claims?from=2025-02-30&plate=flt');
    expect(bad.statusCode).toBe(422);
    expect(bad.body).toContain('The first claim date 2025-02-30 does not exist.');
  });

  it('exports the filtered list as CSV in the import columns, streamed, with id_number left empty', async () => {
    const c = await companyWithPeople(ctx);
    const body = claimBody({ vehicle_registration: 'EXP123', amount: '12.50', is_at_fault: true, status: 'disputed' });
    const mine = await ctx.deps.claims.submit(companyPrincipal(c), { ...body, client: { ...body.client, first_name: '=cmd' } });
    await ctx.deps.claims.submit(companyPrincipal(c), claimBody({ vehicle_registration: 'OTHER1' }));
    const web = await signedIn(ctx, c.member.email);
    const res = await web.get('/claims/export.csv?plate=exp');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toMatch(/^attachment; filename="claims-\d{4}-\d{2}-\d{2}\.csv"$/u);
    const lines = res.body
      .replace(/^\uFEFF/u, '')
      .trim()
      .split('\n');
    expect(lines[0]).toBe(
      'first_name,last_name,date_of_birth,id_type,id_number,claim_date,vehicle_registration,claim_type,amount,currency,is_at_fault,status',
    );
    expect(lines).toHaveLength(2);
    const claim = await ctx.deps.claims.get(companyPrincipal(c), mine.id);
    expect(lines[1]).toBe(
      `'=cmd,${body.client.last_name},${body.client.date_of_birth},${body.client.id_documents[0]!.type},,${claim.claim_date},EXP123,${claim.claim_type ?? ''},12.50,EUR,true,disputed`,
    );
    expect(res.body).not.toContain(body.client.id_documents[0]!.number);
  });

  it('changes the status of an own claim and records the person who did it', async () => {
    const c = await companyWithPeople(ctx);
    const claim = await ctx.deps.claims.submit(companyPrincipal(c), claimBody());
    const web = await signedIn(ctx, c.member.email);
    await web.get(`/claims/${claim.id}`);
    const res = await web.post(`/claims/${claim.id}/status`, { status: 'under_investigation' });
    expect(res.headers.location).toBe(`/claims/${claim.id}?updated=1`);
    expect((await ctx.deps.claims.get(companyPrincipal(c), claim.id)).status).toBe('under_investigation');
    const history = await ctx.deps.repos.claims.statusHistory(c.id, claim.id);
    expect(history).toEqual([
      { from_status: 'filed', to_status: 'under_investigation', changed_by_token_id: null, changed_by_user_id: c.member.id },
    ]);
    const bad = await web.post(`/claims/${claim.id}/status`, { status: 'lost' });
    expect(bad.statusCode).toBe(422);

    // The claim's page shows the change: from, to, when and who (a person, or a token by name).
    await ctx.app.inject({
      method: 'PATCH',
      url: `/api/v1/claims/${claim.id}/status`,
      headers: { authorization: `Bearer ${c.token}`, 'content-type': 'application/json' },
      payload: { status: 'settled' },
    });
    const page = await web.get(`/claims/${claim.id}`);
    const items = [
      ...page.body.matchAll(
        /<li><span class="badge badge-(\w+)">[^<]*<\/span> → <span class="badge badge-(\w+)">[^<]*<\/span><br><span class="hint"><time datetime="[^"]+">[^<]+<\/time> · ([^<]+)<\/span><\/li>/gu,
      ),
    ];
    expect(items.map((m) => [m[1], m[2], m[3]])).toEqual([
      ['under_investigation', 'settled', 'API token “test token”'],
      ['filed', 'under_investigation', c.member.email],
    ]);
  });

  it("links the matches that are the company's own claims, and only those", async () => {
    const c = await companyWithPeople(ctx);
    const other = await companyWithPeople(ctx);
    const plate = `MT${Math.random().toString(36).slice(2, 7).toUpperCase()}`;
    const mine = await ctx.deps.claims.submit(companyPrincipal(c), claimBody({ vehicle_registration: plate }));
    const mine2 = await ctx.deps.claims.submit(companyPrincipal(c), claimBody({ vehicle_registration: plate }));
    const theirs = await ctx.deps.claims.submit(companyPrincipal(other), claimBody({ vehicle_registration: plate }));
    const web = await signedIn(ctx, c.member.email);
    const page = await web.get(`/claims/${mine.id}`);
    expect(page.body).toContain(`<a href="/claims/${mine2.id}">Open<span class="visually-hidden"> your claim of`);
    expect(page.body).not.toContain(`/claims/${theirs.id}`);
    expect(page.body).toContain(`${other.name}</td>`);
  });
});

describe('search by plate', () => {
  it('uses the API rules: normalised plate, every company, the same window', async () => {
    const a = await companyWithPeople(ctx);
    const b = await companyWithPeople(ctx);
    const body = claimBody({ vehicle_registration: 'zz-77.1 q' });
    await ctx.deps.claims.submit(companyPrincipal(a), body);
    await ctx.deps.claims.submit(companyPrincipal(b), claimBody({ vehicle_registration: 'ZZ771Q' }));
    const web = await signedIn(ctx, b.member.email);
    await web.get('/search');
    const res = await web.post('/search', { plate: 'zz 771q' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('2 claims for');
    expect(res.body).toContain(a.name);
    expect(res.body).toContain(`${b.name} (yours)`);
    expect(res.body).not.toContain(body.client.id_documents[0]!.number);
    const invalid = await web.post('/search', { plate: '!!' });
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
    await ctx.deps.claims.submit(companyPrincipal(c), claimBody({ claim_date: today, status: 'settled' }));
    await ctx.deps.claims.submit(companyPrincipal(c), claimBody({ claim_date: today }));
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
