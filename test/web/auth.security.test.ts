import { createHash, randomBytes } from 'node:crypto';

import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { buildApp } from '../../src/app';
import { apiError, claimBody, companyPrincipal, createTestContext, logSink, submitClaim, type TestContext } from '../harness';
import { csv, postImport, validRow } from '../import-helpers';
import { companyWithPeople, PASSWORD, signedIn, WebClient } from './web-client';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx.close());

const sessionCookie = (res: { headers: Record<string, unknown> }) =>
  ([] as string[]).concat((res.headers['set-cookie'] as string | string[] | undefined) ?? []).find((c) => c.startsWith('claims_session='));

describe('dashboard sign-in', () => {
  it('sends signed-out visitors to the sign-in page and back to where they were going', async () => {
    const c = await companyWithPeople(ctx);
    const web = new WebClient(ctx.app);
    const res = await web.get('/settings/tokens');
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/login?next=%2Fsettings%2Ftokens');
    await web.get('/login?next=%2Fsettings%2Ftokens');
    const signIn = await web.post('/login', { email: c.member.email, password: PASSWORD, next: '/settings/tokens' });
    expect(signIn.headers.location).toBe('/settings/tokens');
  });

  it('never redirects to another site after sign-in', async () => {
    const c = await companyWithPeople(ctx);
    for (const next of ['//evil.example/x', 'https://evil.example', '/\\evil.example']) {
      const web = new WebClient(ctx.app);
      await web.get('/login');
      const res = await web.post('/login', { email: c.member.email, password: PASSWORD, next });
      expect(res.statusCode).toBe(303);
      expect(res.headers.location).toBe('/');
    }
  });

  it('sets the session cookie HttpOnly and SameSite=Lax, not Secure over plain HTTP', async () => {
    const web = new WebClient(ctx.app);
    const res = await web.get('/login');
    const cookie = sessionCookie(res)!;
    expect(cookie).toMatch(/; HttpOnly/u);
    expect(cookie).toMatch(/; SameSite=Lax/u);
    expect(cookie).not.toMatch(/; Secure/u);
  });

  it('ignores X-Forwarded-Proto unless TRUST_PROXY is on', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: '/login', headers: { 'x-forwarded-proto': 'https' } });
    expect(sessionCookie(res)).not.toMatch(/; Secure/u);
  });

  it('rotates the session id at sign-in; the id from before sign-in is worth nothing after', async () => {
    const c = await companyWithPeople(ctx);
    const web = new WebClient(ctx.app);
    await web.get('/login');
    const before = web.cookies.get('claims_session')!;
    await web.post('/login', { email: c.member.email, password: PASSWORD });
    const after = web.cookies.get('claims_session')!;
    expect(after).toBeTruthy();
    expect(after).not.toBe(before);
    expect((await web.get('/claims')).statusCode).toBe(200);
    const planted = await ctx.app.inject({ method: 'GET', url: '/claims', headers: { cookie: `claims_session=${before}` } });
    expect(planted.statusCode).toBe(303);
  });

  it('keeps only a hash of the session id in the database', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.member.email);
    const sid = decodeURIComponent(web.cookies.get('claims_session')!).split('.')[0]!;
    const rows = await ctx.deps.db.query<{ sid_hash: string; data: string }>('SELECT sid_hash, data::text AS data FROM web_sessions');
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) {
      expect(r.sid_hash).not.toContain(sid);
      expect(r.data).not.toContain(sid);
    }
  });

  it('lets a session nobody signed in to live one hour, and a sign-in eight hours', async () => {
    const c = await companyWithPeople(ctx);
    const web = new WebClient(ctx.app);
    await web.get('/login');
    const minutesLeft = async () => {
      const sid = decodeURIComponent(web.cookies.get('claims_session')!).split('.')[0]!;
      const rows = await ctx.deps.db.query<{ minutes: number }>(
        'SELECT round(extract(epoch FROM (expires_at - now())) / 60)::int AS minutes FROM web_sessions WHERE sid_hash = $1',
        [createHash('sha256').update(sid).digest('hex')],
      );
      return Number(rows[0]!.minutes);
    };
    expect(await minutesLeft()).toBeLessThanOrEqual(60);
    await web.post('/login', { email: c.member.email, password: PASSWORD });
    // A signed-in session's row ends when the session would end idle (SESSION_IDLE_MINUTES, 30),
    // moved on by activity, and never after 8 hours.
    expect(await minutesLeft()).toBeGreaterThan(30 - 2);
    expect(await minutesLeft()).toBeLessThanOrEqual(30);
  });

  it('destroys the session at sign-out: the old cookie no longer signs anyone in', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.member.email);
    const cookie = web.cookies.get('claims_session')!;
    await web.get('/');
    const out = await web.post('/logout');
    expect(out.statusCode).toBe(303);
    expect(out.headers.location).toBe('/login?signed_out=1');
    const replay = await ctx.app.inject({ method: 'GET', url: '/', headers: { cookie: `claims_session=${cookie}` } });
    expect(replay.statusCode).toBe(303);
    expect(replay.headers.location).toBe('/login');
  });

  it('signs a removed person out at once', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.member.email);
    expect((await web.get('/claims')).statusCode).toBe(200);
    await ctx.deps.companies.removeUser(c.member.id, c.id);
    expect((await web.get('/claims')).statusCode).toBe(303);
  });

  it('answers a wrong password with one message for unknown emails and wrong passwords, and never shows the password', async () => {
    const c = await companyWithPeople(ctx);
    const bodies: string[] = [];
    for (const email of [c.member.email, 'nobody@nowhere.example']) {
      const web = new WebClient(ctx.app);
      await web.get('/login');
      const res = await web.post('/login', { email, password: 'Wrong-Password-123456' });
      expect(res.statusCode).toBe(401);
      expect(res.body).not.toContain('Wrong-Password-123456');
      bodies.push(res.body.replace(/name="_csrf" value="[^"]+"/u, '').replaceAll(email, 'EMAIL'));
    }
    expect(bodies[0]).toContain('The email or password is not right.');
    expect(bodies[0]).toBe(bodies[1]);
  });
});

describe('CSRF protection', () => {
  it('refuses the sign-in form without its token', async () => {
    const c = await companyWithPeople(ctx);
    const web = new WebClient(ctx.app);
    await web.get('/login');
    const res = await web.post('/login', { email: c.member.email, password: PASSWORD }, { csrf: null });
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain('The sign-in form had expired');
    expect(web.cookies.get('claims_session')).toBeTruthy();
    expect((await web.get('/claims')).statusCode).toBe(303);
  });

  it('refuses every state-changing dashboard form without a valid token, and changes nothing', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.admin.email);
    await web.get('/settings/tokens');
    const [token] = await ctx.deps.tokens.list(c.id);
    const claim = await ctx.deps.claims.submit(companyPrincipal(c), claimBody());
    const forms: [string, Record<string, string>][] = [
      ['/settings/tokens', { name: 'sneaky' }],
      [`/settings/tokens/${token!.id}/revoke`, {}],
      ['/settings/people', { email: 'sneaky@x.example', role: 'admin', password: 'a-long-password-123' }],
      [`/settings/people/${c.member.id}/remove`, {}],
      [`/claims/${claim.id}/status`, { status: 'closed' }],
      ['/claims', { 'client.first_name': 'X' }],
      ['/logout', {}],
    ];
    for (const [url, form] of forms) {
      for (const csrf of [null, 'not-a-token', `${web.lastCsrf}x`]) {
        const res = await web.post(url, form, { csrf });
        expect(res.statusCode, `${url} with ${csrf}`).toBe(403);
      }
    }
    expect((await ctx.deps.tokens.list(c.id)).map((t) => [t.name, t.revoked_at])).toEqual([['test token', null]]);
    expect((await ctx.deps.companies.listUsers(c.id)).length).toBe(2);
    expect((await ctx.deps.claims.get(companyPrincipal(c), claim.id)).status).toBe('filed');
    expect((await web.get('/claims')).statusCode).toBe(200);
  });

  it("does not accept one session's token in another session", async () => {
    const c = await companyWithPeople(ctx);
    const a = await signedIn(ctx, c.admin.email);
    const b = await signedIn(ctx, c.member.email);
    await a.get('/settings/tokens');
    await b.get('/settings/tokens');
    const res = await b.post('/settings/tokens', { name: 'cross' }, { csrf: a.lastCsrf });
    expect(res.statusCode).toBe(403);
  });
});

describe('sign-in rate limit', () => {
  it('allows 10 attempts a minute per address and email, then shows a friendly 429 page with Retry-After', async () => {
    const c = await companyWithPeople(ctx);
    const headers = { 'x-forwarded-for': '203.0.113.7' }; // ignored without TRUST_PROXY: all inject requests share 127.0.0.1
    const web = new WebClient(ctx.app, headers);
    await web.get('/login');
    for (let i = 0; i < 10; i++) {
      const res = await web.post('/login', { email: c.admin.email, password: `wrong-password-${i}` });
      expect(res.statusCode).toBe(401);
    }
    const limited = await web.post('/login', { email: c.admin.email, password: PASSWORD });
    expect(limited.statusCode).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.headers['content-type']).toMatch(/text\/html/u);
    expect(limited.body).toContain('Too many sign-in attempts');
    expect(limited.body).not.toContain(PASSWORD);
    // Another person signing in from the same address is not locked out by it.
    const other = new WebClient(ctx.app);
    await other.get('/login');
    expect((await other.post('/login', { email: c.member.email, password: PASSWORD })).statusCode).toBe(303);
  });
});

describe('logs', () => {
  it('never contain a password, a session id or a token value', async () => {
    const { stream, lines } = logSink();
    const app = await buildApp(ctx.deps, { logger: pino({ level: 'trace' }, stream) });
    await app.ready();
    try {
      const c = await companyWithPeople(ctx);
      const web = new WebClient(app);
      await web.get('/login');
      await web.post('/login', { email: c.admin.email, password: 'Wrong-Password-987654' });
      await web.post('/login', { email: c.admin.email, password: PASSWORD });
      await web.get('/settings/people');
      const added = await web.post('/settings/people', {
        email: 'new-person@x.example',
        role: 'member',
        password: 'Chosen-Password-555555',
      });
      expect(added.statusCode).toBe(303);
      await web.get('/settings/people');
      const generated = await web.submit('/settings/people', { email: 'gen-person@x.example', role: 'member', password: '' });
      const shown = /id="first-password"[^>]*value="([^"]+)"/u.exec(generated.body)![1]!;
      await web.get('/settings/tokens');
      const created = await web.submit('/settings/tokens', { name: 'log check', scopes: ['claims:read'], expires: '30' });
      const token = /id="token-value"[^>]*value="(csk_[^"]+)"/u.exec(created.body)![1]!;
      const sid = decodeURIComponent(web.cookies.get('claims_session')!).split('.')[0]!;
      const all = lines.join('\n');
      expect(all.length).toBeGreaterThan(0);
      for (const secret of ['Wrong-Password-987654', PASSWORD, 'Chosen-Password-555555', shown, token, sid])
        expect(all).not.toContain(secret);
    } finally {
      await app.close();
    }
  });
});

describe('page headers', () => {
  it('sends a strict content security policy and no caching on every page', async () => {
    const c = await companyWithPeople(ctx);
    const claim = await submitClaim(ctx, c);
    const imported = await postImport(ctx.app, c.auth, csv([validRow()]));
    expect(imported.statusCode, imported.body).toBe(200);
    const importId = (await ctx.app.inject({ method: 'GET', url: '/api/v1/imports', headers: c.auth })).json().data[0].id as string;
    const operatorEmail = `operator-${randomBytes(3).toString('hex')}@registry.example`;
    await ctx.deps.companies.createUser({ companyId: null, email: operatorEmail, password: PASSWORD, role: 'operator' });

    const signedOut = new WebClient(ctx.app);
    const admin = await signedIn(ctx, c.admin.email);
    const operator = await signedIn(ctx, operatorEmail);
    const pages: [WebClient, string, number][] = [
      [signedOut, '/login', 200],
      [signedOut, '/claims', 303],
      [signedOut, '/nothing-here', 404],
      [admin, '/', 200],
      [admin, '/claims', 200],
      [admin, '/claims/new', 200],
      [admin, `/claims/${claim.id}`, 200],
      [admin, `/search?plate=${encodeURIComponent(claim.vehicle_registration)}`, 200],
      [admin, '/search', 200],
      [admin, '/imports', 200],
      [admin, `/imports/${importId}`, 200],
      [admin, '/lookups', 200],
      [admin, '/settings/people', 200],
      [admin, '/settings/tokens', 200],
      [admin, '/settings/webhooks', 200],
      [operator, '/operator', 200],
      [operator, `/operator/companies/${c.id}`, 200],
    ];
    for (const [web, url, status] of pages) {
      const res = await web.get(url);
      expect(res.statusCode, url).toBe(status);
      expect(res.headers['content-security-policy'], url).toContain("script-src 'self'");
      expect(res.headers['content-security-policy'], url).toContain("frame-ancestors 'none'");
      expect(res.headers['cache-control'], url).toBe('no-store');
      expect(res.headers['x-frame-options'], url).toBe('DENY');
    }
  });

  it('serves the stylesheet and script from /assets', async () => {
    const css = await ctx.app.inject({ method: 'GET', url: '/assets/app.css' });
    expect(css.statusCode).toBe(200);
    expect(css.headers['content-type']).toMatch(/text\/css/u);
    const js = await ctx.app.inject({ method: 'GET', url: '/assets/app.js' });
    expect(js.statusCode).toBe(200);
  });

  it('keeps the JSON 404 under /api/v1 and shows an HTML 404 elsewhere', async () => {
    const api = await ctx.app.inject({ method: 'GET', url: '/api/v1/nothing-here' });
    expect(api.statusCode).toBe(404);
    expect(api.json()).toEqual(apiError('not_found', 'No route for GET /api/v1/nothing-here.'));
    const page = await new WebClient(ctx.app).get('/nothing-here');
    expect(page.statusCode).toBe(404);
    expect(page.body).toContain('Page not found');
  });
});
