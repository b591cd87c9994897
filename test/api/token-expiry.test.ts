import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, type TestContext } from '../harness';
import { companyWithPeople, signedIn } from '../web/web-client';

/**
 * Token expiry, on a clock the test moves: a token works until the instant it expires and is
 * refused from that instant on (401 token_expired), even while this process holds it in memory;
 * TOKEN_MAX_LIFETIME_DAYS caps new tokens; the dashboard flags tokens that expire within 7 days.
 */
const DAY = 86_400_000;
const START = Date.parse('2031-05-10T12:00:00Z');
let clock = START;
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ TOKEN_MAX_LIFETIME_DAYS: '30' }, { now: () => clock, today: () => '2031-05-10' });
});
afterAll(() => ctx.close());

const get = (token: string) => ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: { authorization: `Bearer ${token}` } });

describe('an expiring token', () => {
  it('works until its last millisecond and is 401 token_expired from its expiry on, cached or not', async () => {
    clock = START;
    const company = await ctx.newCompany('Expiry');
    const t = await ctx.deps.tokens.create(company.id, 'seven days', null, { lifetime: { days: 7 } });
    expect(t.expires_at).toBe('2031-05-17T12:00:00+00:00');
    expect((await get(t.token)).statusCode).toBe(200);
    clock = START + 7 * DAY - 1;
    expect((await get(t.token)).statusCode).toBe(200);
    clock = START + 7 * DAY;
    const res = await get(t.token);
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ code: 'token_expired', message: 'The token has expired.', request_id: res.headers['x-request-id'] });
    expect(res.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
    clock = START;
  });

  it('may not live longer than TOKEN_MAX_LIFETIME_DAYS, nor forever while a maximum is set', async () => {
    const company = await ctx.newCompany('Cap');
    await expect(ctx.deps.tokens.create(company.id, 'long', null, { lifetime: { days: 31 } })).rejects.toMatchObject({
      fields: { expires: ['A token may live at most 30 days (TOKEN_MAX_LIFETIME_DAYS).'] },
    });
    await expect(ctx.deps.tokens.create(company.id, 'forever', null, { lifetime: 'never' })).rejects.toMatchObject({
      fields: { expires: [expect.stringContaining('30 days')] },
    });
    const ok = await ctx.deps.tokens.create(company.id, 'thirty', null, { lifetime: { days: 30 } });
    expect(ok.expires_at).toBe('2031-06-09T12:00:00+00:00');
  });
});

describe('the dashboard token form', () => {
  it('offers only lifetimes within the maximum, refuses a longer one with 422, and flags tokens that expire within 7 days', async () => {
    clock = START;
    const c = await companyWithPeople(ctx, 'Form');
    const web = await signedIn(ctx, c.admin.email);
    const page = await web.get('/settings/tokens');
    expect(page.body).toContain('id="expires-7"');
    expect(page.body).toContain('id="expires-30"');
    expect(page.body).not.toContain('id="expires-90"');
    expect(page.body).not.toContain('id="expires-never"');
    // No scope is pre-chosen.
    expect(page.body).not.toMatch(/name="scopes"[^>]*checked/u);

    const tooLong = await web.post('/settings/tokens', { name: 'long', scopes: ['search'], expires: 'date', expires_on: '2031-07-01' });
    expect(tooLong.statusCode).toBe(422);
    expect(tooLong.body).toContain('id="token-expires-error">A token may live at most 30 days');
    const noScope = await web.post('/settings/tokens', { name: 'no scope', expires: '7' });
    expect(noScope.statusCode).toBe(422);
    expect(noScope.body).toContain('id="token-scopes-error">Choose at least one scope.');

    const soon = await web.post('/settings/tokens', { name: 'soon', scopes: ['search', 'claims:read'], expires: '7' });
    expect(soon.statusCode).toBe(303);
    const later = await web.post('/settings/tokens', { name: 'later', scopes: ['alerts:read'], expires: 'date', expires_on: '2031-06-01' });
    expect(later.statusCode).toBe(303);
    const list = (await web.get('/settings/tokens')).body;
    const row = (name: string) => list.slice(list.indexOf(`data-label="Name">${name}<`)).split('</tr>')[0]!;
    expect(row('soon')).toContain('claims:read, search');
    expect(row('soon')).toContain('Expires within 7 days');
    expect(row('later')).toContain('alerts:read');
    expect(row('later')).toContain('datetime="2031-06-02T00:00:00+00:00"');
    expect(row('later')).not.toContain('Expires within 7 days');
  });
});

describe('without a maximum', () => {
  it('offers "never", and such a token does not expire', async () => {
    const local = await createTestContext({ TOKEN_MAX_LIFETIME_DAYS: '0' }, { now: () => clock });
    try {
      const c = await companyWithPeople(local, 'Never');
      const web = await signedIn(local, c.admin.email);
      expect((await web.get('/settings/tokens')).body).toContain('id="expires-never"');
      const t = await local.deps.tokens.create(c.id, 'forever', null, { lifetime: 'never' });
      expect(t.expires_at).toBeNull();
      clock = START + 5000 * DAY;
      const res = await local.app.inject({ method: 'GET', url: '/api/v1/claims', headers: { authorization: `Bearer ${t.token}` } });
      expect(res.statusCode).toBe(200);
    } finally {
      clock = START;
      await local.close();
    }
  });
});
