import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { apiError, claimBody, createTestContext, docNumber, type Company, type TestContext } from '../harness';
import { companyWithPeople, signedIn } from '../web/web-client';

/**
 * "Access, hardened" (DECISIONS): limits everywhere (a company's budget beside each token's, the
 * scope decided after the budget so a refused call is counted, the failure budget on a 401, a
 * budget per signed-in person, dashboard searches on the company's budget), a person search as an
 * identity check, and a claim page opened from another site writing no look-up.
 */
const TOKEN_LIMIT = 6;
const COMPANY_LIMIT = 9;
const SESSION_LIMIT = 15;
const FAILURES = 40;
const MISMATCHES = 2;
let clock = Date.now();
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext(
    {
      RATE_LIMIT_PER_MINUTE: String(TOKEN_LIMIT),
      COMPANY_RATE_LIMIT_PER_MINUTE: String(COMPANY_LIMIT),
      SESSION_RATE_LIMIT_PER_MINUTE: String(SESSION_LIMIT),
      AUTH_FAILURES_PER_MINUTE: String(FAILURES),
      IDENTITY_MISMATCHES_PER_HOUR: String(MISMATCHES),
    },
    { now: () => clock },
  );
});
afterAll(async () => ctx?.close());

const list = (token: string, remoteAddress = '127.0.0.1') =>
  ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: { authorization: `Bearer ${token}` }, remoteAddress });
const lookupsOf = async (c: Company) =>
  (await ctx.app.inject({ method: 'GET', url: '/api/v1/lookups?limit=100', headers: c.auth })).json().data as { kind: string }[];
/** A company without budgets of its own, so that a test's counting starts from zero. */
const fresh = async (name: string) => {
  const c = await ctx.newCompany(name);
  await ctx.deps.companies.setLimits(c.id, { perToken: 1000, perCompany: 1000 });
  await ctx.app.rateLimits.refreshCompanyLimits();
  return c;
};

describe('limits everywhere', () => {
  it("refuses two tokens of one company past the company's budget, each within its own", async () => {
    const c = await ctx.newCompany('Two tokens');
    const second = (await ctx.deps.tokens.create(c.id, 'second token')).token;
    const answers = [];
    for (let i = 0; i < COMPANY_LIMIT; i++) answers.push(await list(i % 2 === 0 ? c.token : second));
    expect(answers.map((r) => r.statusCode)).toEqual(Array(COMPANY_LIMIT).fill(200));
    // Each token has made at most 5 of its 6; the company's 9 are spent.
    const refused = await list(second);
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toEqual(apiError('rate_limited', 'Too many requests. Try again later.'));
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    // The headers are the budget with less left: the company's.
    expect(refused.headers['ratelimit-limit']).toBe(String(COMPANY_LIMIT));
    expect(refused.headers['ratelimit-remaining']).toBe('0');
    // A token of another company goes on.
    expect((await list((await ctx.newCompany('Other')).token)).statusCode).toBe(200);
  });

  it('is set per company by the operator, both budgets (admin company:limits)', async () => {
    const c = await ctx.newCompany('Own company limit');
    await ctx.deps.companies.setLimits(c.id, { perCompany: 2 });
    await ctx.app.rateLimits.refreshCompanyLimits();
    expect((await list(c.token)).headers['ratelimit-limit']).toBe('2');
    expect((await list(c.token)).statusCode).toBe(200);
    expect((await list(c.token)).statusCode).toBe(429);
  });

  it('counts a call refused for its scope, and says so in the 403 headers', async () => {
    const c = await fresh('Scope refused');
    const readOnly = (await ctx.deps.tokens.create(c.id, 'read only', null, { scopes: ['claims:read'] })).token;
    await ctx.deps.companies.setLimits(c.id, { perToken: TOKEN_LIMIT });
    await ctx.app.rateLimits.refreshCompanyLimits();
    const first = await list(readOnly);
    expect(first.headers['ratelimit-remaining']).toBe(String(TOKEN_LIMIT - 1));
    const search = () =>
      ctx.app.inject({
        method: 'POST',
        url: '/api/v1/claims/search-by-plate',
        headers: { authorization: `Bearer ${readOnly}` },
        payload: { vehicle_registration: 'ABC123' },
      });
    const refused = await search();
    expect(refused.statusCode).toBe(403);
    expect(refused.json().code).toBe('insufficient_scope');
    expect(refused.headers['ratelimit-remaining']).toBe(String(TOKEN_LIMIT - 2));
    expect(refused.headers['ratelimit-limit']).toBe(String(TOKEN_LIMIT));
    // Refused calls spend the budget: past it, 429 rather than 403.
    for (let i = 0; i < TOKEN_LIMIT - 2; i++) expect((await search()).statusCode).toBe(403);
    expect((await search()).statusCode).toBe(429);
  });

  it('carries the RateLimit headers on a 404 to a token, and the failure budget’s on a 401', async () => {
    const c = await fresh('Not found');
    const missing = await ctx.app.inject({ method: 'GET', url: `/api/v1/claims/${crypto.randomUUID()}`, headers: c.auth });
    expect(missing.statusCode).toBe(404);
    expect(missing.headers['ratelimit-limit']).toBe('1000');
    const address = '10.9.8.7';
    const unknown = await list('csk_nothing_of_the_kind', address);
    expect(unknown.statusCode).toBe(401);
    expect(unknown.headers['ratelimit-limit']).toBe(String(FAILURES));
    expect(unknown.headers['ratelimit-remaining']).toBe(String(FAILURES - 1));
    const again = await list('csk_nothing_of_the_kind', address);
    expect(again.headers['ratelimit-remaining']).toBe(String(FAILURES - 2));
  });

  it('refuses a signed-in person past their budget with 429, while another person of the company goes on', async () => {
    const company = await companyWithPeople(ctx, 'Session budget');
    await ctx.deps.companies.setLimits(company.id, { perToken: 1000, perCompany: 1000 });
    await ctx.app.rateLimits.refreshCompanyLimits();
    const admin = await signedIn(ctx, company.admin.email);
    const statuses: number[] = [];
    for (let i = 0; i < SESSION_LIMIT + 1; i++) statuses.push((await admin.get('/claims')).statusCode);
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(SESSION_LIMIT);
    expect(statuses.at(-1)).toBe(429);
    const refused = await admin.get('/claims');
    expect(refused.statusCode).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.body).toContain('Too many requests from your session');
    const member = await signedIn(ctx, company.member.email);
    expect((await member.get('/claims')).statusCode).toBe(200);
  });

  it("counts the dashboard's searches against the company's budget, as the API's", async () => {
    const company = await companyWithPeople(ctx, 'Dashboard searches');
    await ctx.deps.companies.setLimits(company.id, { perToken: 1000, perCompany: 3 });
    await ctx.app.rateLimits.refreshCompanyLimits();
    const admin = await signedIn(ctx, company.admin.email);
    await admin.get('/search');
    // Posts without the form's CSRF token are refused before they count.
    for (let i = 0; i < 3; i++) {
      expect((await admin.post('/search', { vehicle_registration: 'ABC123', purpose: '' }, { csrf: null })).statusCode).toBe(403);
    }
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await admin.post('/search', { vehicle_registration: 'ABC123', purpose: '' })).statusCode);
    expect(statuses.slice(0, 3).every((s) => s !== 429)).toBe(true);
    expect(statuses[3]).toBe(429);
    // The company's tokens share that budget.
    expect((await list(company.token)).statusCode).toBe(429);
  });
});

describe('a person search is an identity check', () => {
  const search = (c: Company, number: string, dateOfBirth: string) =>
    ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims/search-by-person',
      headers: c.auth,
      payload: { date_of_birth: dateOfBirth, id_documents: [{ type: 'passport', number }] },
    });

  it('records a search that finds the document with another date of birth as one identity_check entry, and refuses past the budget', async () => {
    const [owner, searcher] = [await fresh('Owner'), await fresh('Searcher')];
    const number = docNumber();
    const submitted = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims',
      headers: owner.auth,
      payload: claimBody({}, { date_of_birth: '1980-04-12', id_documents: [{ type: 'passport', number }] }),
    });
    expect(submitted.statusCode).toBe(201);

    // The right date of birth and an unknown document: no identity check.
    expect((await search(searcher, number, '1980-04-12')).json().data).toHaveLength(1);
    expect((await search(searcher, docNumber(), '1980-04-12')).json().data).toHaveLength(0);
    expect((await lookupsOf(searcher)).filter((l) => l.kind === 'identity_check')).toHaveLength(0);

    // A guessed date of birth: the same empty answer, and one identity_check entry.
    const guess = await search(searcher, number, '1980-04-13');
    expect(guess.statusCode).toBe(200);
    expect(guess.json().data).toEqual([]);
    expect((await lookupsOf(searcher)).filter((l) => l.kind === 'identity_check')).toHaveLength(1);

    // The budget (2 an hour): the second guess is told, the third refused, as a submission would be.
    expect((await search(searcher, number, '1980-04-14')).statusCode).toBe(200);
    const refused = await search(searcher, number, '1980-04-15');
    expect(refused.statusCode).toBe(429);
    expect(refused.json().code).toBe('identity_check_limited');
    expect((await lookupsOf(searcher)).filter((l) => l.kind === 'identity_check')).toHaveLength(MISMATCHES);
    // Every person search of the company is refused until the hour has passed, even a right one.
    expect((await search(searcher, number, '1980-04-12')).statusCode).toBe(429);
    clock += 3_600_000 + 1000;
    expect((await search(searcher, number, '1980-04-12')).statusCode).toBe(200);
  });
});

describe('parallel person searches', () => {
  it('tell no more mismatches than the budget, however many are sent at once', async () => {
    const [owner, searcher] = [await fresh('Parallel owner'), await fresh('Parallel searcher')];
    const number = docNumber();
    const submitted = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims',
      headers: owner.auth,
      payload: claimBody({}, { date_of_birth: '1970-01-15', id_documents: [{ type: 'passport', number }] }),
    });
    expect(submitted.statusCode).toBe(201);
    const guesses = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        ctx.app.inject({
          method: 'POST',
          url: '/api/v1/claims/search-by-person',
          headers: searcher.auth,
          payload: { date_of_birth: `1971-02-${String(i + 10)}`, id_documents: [{ type: 'passport', number }] },
        }),
      ),
    );
    expect(guesses.filter((g) => g.statusCode === 200)).toHaveLength(MISMATCHES);
    expect(guesses.filter((g) => g.statusCode === 429)).toHaveLength(8 - MISMATCHES);
    expect((await lookupsOf(searcher)).filter((l) => l.kind === 'identity_check')).toHaveLength(MISMATCHES);
  });
});

describe('a claim page opened from another site', () => {
  it('writes no look-up and offers a button that loads the panels by a POST with the CSRF token', async () => {
    const company = await companyWithPeople(ctx, 'Cross-site');
    await ctx.deps.companies.setLimits(company.id, { perToken: 1000, perCompany: 1000 });
    await ctx.app.rateLimits.refreshCompanyLimits();
    const created = await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: claimBody() });
    const id = created.json().data.id as string;
    const admin = await signedIn(ctx, company.admin.email);
    const panels = (kinds: { kind: string }[]) => kinds.filter((l) => ['matches', 'incident', 'network'].includes(l.kind)).length;
    const before = panels(await lookupsOf(company));

    const fromElsewhere: Record<string, string>[] = [
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site' },
      { referer: 'https://evil.example/page' },
    ];
    for (const headers of fromElsewhere) {
      const page = await admin.get(`/claims/${id}`, headers);
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('Show matches, incident and network');
      expect(page.body).not.toContain('Matches in the registry');
    }
    expect(panels(await lookupsOf(company))).toBe(before);

    // The button: a POST with the CSRF token shows them, each a look-up.
    const shown = await admin.post(`/claims/${id}/registry`, {});
    expect(shown.statusCode).toBe(200);
    expect(shown.body).toContain('Matches in the registry');
    expect(panels(await lookupsOf(company))).toBe(before + 3);
    // Without the token the POST does nothing.
    expect((await admin.post(`/claims/${id}/registry`, {}, { csrf: null })).statusCode).toBe(403);
    expect(panels(await lookupsOf(company))).toBe(before + 3);

    // A navigation from the dashboard itself (or without those headers) shows them at once, as before.
    const own = await admin.get(`/claims/${id}`, { 'sec-fetch-site': 'same-origin' });
    expect(own.body).toContain('Matches in the registry');
    expect(panels(await lookupsOf(company))).toBe(before + 6);
  });
});
