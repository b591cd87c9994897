import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, type TestContext } from '../harness';
import { companyWithPeople, PASSWORD, totpCode, totpKeys, WebClient } from './web-client';

// The second factor (TOTP, RFC 6238) through the dashboard, with the codes computed here from
// the shared key as an authenticator app does, on a clock the test sets.
let ctx: TestContext;
let t = Date.now();
beforeAll(async () => {
  ctx = await createTestContext({}, { now: () => t });
});
afterAll(async () => ctx?.close());

const keyOf = (body: string) => /id="totp-key"[^>]*value="([A-Z2-7 ]+)"/u.exec(body)?.[1]?.replaceAll(' ', '');
const codesOf = (body: string) => [...body.matchAll(/<li>([a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4})<\/li>/gu)].map((m) => m[1]!);

/** A member who set up a second factor from Settings, Security: their client, key and recovery codes. */
async function enrolled() {
  const c = await companyWithPeople(ctx);
  const web = new WebClient(ctx.app);
  await web.signIn(c.member.email, PASSWORD, t);
  expect((await web.get('/settings/security')).body).toContain('Set up a second factor');
  const setup = await web.post('/settings/security/second-factor');
  expect(setup.statusCode).toBe(200);
  expect(setup.body).toMatch(/<img src="data:image\/svg\+xml;base64,[A-Za-z0-9+/=]+"/u);
  const key = keyOf(setup.body)!;
  expect(key).toMatch(/^[A-Z2-7]{32}$/u);
  const wrong = await web.post('/settings/security/second-factor/confirm', { code: totpCode(key, t + 120_000) });
  expect(wrong.statusCode).toBe(422);
  const done = await web.post('/settings/security/second-factor/confirm', { code: totpCode(key, t) });
  expect(done.statusCode).toBe(200);
  const codes = codesOf(done.body);
  expect(codes).toHaveLength(10);
  totpKeys.set(c.member.email, key);
  return { c, web, key, codes };
}

async function toCodeStep(email: string) {
  const web = new WebClient(ctx.app);
  await web.get('/login');
  const res = await web.post('/login', { email, password: PASSWORD });
  expect(res.headers.location).toBe('/login/code');
  expect((await web.get('/login/code')).statusCode).toBe(200);
  return web;
}

describe('TOTP second factor', () => {
  it('is set up from Settings, Security with a QR code and the key, confirmed by one code; the key is stored sealed and the recovery codes hashed', async () => {
    const { c, key, codes } = await enrolled();
    const rows = await ctx.deps.db.query<{ sealed: string; enabled: boolean }>(
      'SELECT totp_secret_sealed AS sealed, totp_enabled_at IS NOT NULL AS enabled FROM users WHERE id = $1',
      [c.member.id],
    );
    expect(rows[0]!.enabled).toBe(true);
    expect(rows[0]!.sealed).toMatch(/^v1\./u);
    expect(rows[0]!.sealed).not.toContain(key);
    const stored = await ctx.deps.db.query<{ code_hash: string }>('SELECT code_hash FROM user_recovery_codes WHERE user_id = $1', [
      c.member.id,
    ]);
    expect(stored).toHaveLength(10);
    for (const code of codes) expect(stored.map((r) => r.code_hash).join()).not.toContain(code.replaceAll('-', ''));
    // Shown once: the security page afterwards shows how many are left, not the codes.
    const web = new WebClient(ctx.app);
    await web.signIn(c.member.email, PASSWORD, t + 30_000);
    const page = await web.get('/settings/security');
    expect(page.body).toContain('Recovery codes left: 10 of 10');
    for (const code of codes) expect(page.body).not.toContain(code);
  });

  it('asks for a code at sign-in: a code of the step before or after is accepted, two steps away refused, none twice', async () => {
    const { c, key } = await enrolled();
    t += 5 * 60_000;
    const web = await toCodeStep(c.member.email);
    expect((await web.get('/')).headers.location).toBe('/login');
    for (const away of [-60_000, 60_000]) {
      const res = await web.post('/login/code', { code: totpCode(key, t + away) });
      expect(res.statusCode, `${away / 1000} s away`).toBe(401);
      expect(res.body).toContain('That code is not right');
    }
    const before = await web.post('/login/code', { code: totpCode(key, t - 30_000) });
    expect(before.statusCode).toBe(303);
    expect((await web.get('/claims')).statusCode).toBe(200);

    const again = await toCodeStep(c.member.email);
    // The code just used does not work again.
    expect((await again.post('/login/code', { code: totpCode(key, t - 30_000) })).statusCode).toBe(401);
    const after = await again.post('/login/code', { code: totpCode(key, t + 30_000) });
    expect(after.statusCode).toBe(303);
    expect((await again.get('/claims')).statusCode).toBe(200);
  });

  it('accepts a recovery code instead, once', async () => {
    const { c, codes } = await enrolled();
    const web = await toCodeStep(c.member.email);
    expect((await web.post('/login/code', { code: codes[3]!.toUpperCase() })).statusCode).toBe(303);
    expect((await web.get('/claims')).statusCode).toBe(200);
    const again = await toCodeStep(c.member.email);
    const res = await again.post('/login/code', { code: codes[3]! });
    expect(res.statusCode).toBe(401);
    expect((await again.get('/claims')).headers.location).toBe('/login?next=%2Fclaims');
    expect((await again.post('/login/code', { code: codes[4]! })).statusCode).toBe(303);
  });

  it('is turned off only with a code', async () => {
    const { c, web, key } = await enrolled();
    await web.get('/settings/security');
    t += 60_000;
    const wrong = await web.post('/settings/security/second-factor/disable', { code: '000000' });
    expect(wrong.statusCode).toBe(422);
    expect((await ctx.deps.signIn.secondFactor(c.member.id)).enabled).toBe(true);
    const off = await web.post('/settings/security/second-factor/disable', { code: totpCode(key, t) });
    expect(off.statusCode).toBe(303);
    expect((await ctx.deps.signIn.secondFactor(c.member.id)).enabled).toBe(false);
    expect(await ctx.deps.db.query('SELECT 1 FROM user_recovery_codes WHERE user_id = $1', [c.member.id])).toHaveLength(0);
    // Signing in is one step again.
    const again = new WebClient(ctx.app);
    await again.get('/login');
    expect((await again.post('/login', { email: c.member.email, password: PASSWORD })).headers.location).toBe('/');
  });

  it('is required of everyone when the company admin says so: people without one set it up at their next sign-in', async () => {
    const c = await companyWithPeople(ctx);
    const member = new WebClient(ctx.app);
    await member.signIn(c.member.email, PASSWORD, t);
    expect((await member.get('/claims')).statusCode).toBe(200);
    const admin = new WebClient(ctx.app);
    await admin.signIn(c.admin.email, PASSWORD, t);
    await admin.get('/settings/sign-in');
    // Only admins may change it.
    await member.get('/settings/security');
    expect((await member.post('/settings/sign-in/second-factor', { require_second_factor: 'on' })).statusCode).toBe(403);
    expect((await admin.post('/settings/sign-in/second-factor', { require_second_factor: 'on' })).statusCode).toBe(303);
    // The member, already signed in, is sent to set it up before anything else.
    expect((await member.get('/claims')).headers.location).toBe('/login?next=%2Fclaims');
    expect((await member.get('/login')).headers.location).toBe('/login/enrol');
    // A fresh sign-in goes to the set-up too, and nothing else opens until it is done.
    const fresh = new WebClient(ctx.app);
    await fresh.get('/login');
    expect((await fresh.post('/login', { email: c.member.email, password: PASSWORD })).headers.location).toBe('/login/enrol');
    expect((await fresh.get('/claims')).statusCode).toBe(303);
    const page = await fresh.get('/login/enrol');
    expect(page.body).toContain('A second factor is required for your account');
    const key = keyOf(page.body)!;
    const done = await fresh.post('/login/enrol', { code: totpCode(key, t) });
    expect(done.statusCode).toBe(200);
    expect(codesOf(done.body)).toHaveLength(10);
    expect((await fresh.get('/claims')).statusCode).toBe(200);
    // It cannot be turned off while required.
    await fresh.get('/settings/security');
    const off = await fresh.post('/settings/security/second-factor/disable', { code: totpCode(key, t + 30_000) });
    expect(off.statusCode).toBe(403);
  });

  it('is always required of operators: an operator without one sets it up at sign-in', async () => {
    const email = `operator-${Math.random().toString(36).slice(2, 8)}@registry.example`;
    await ctx.deps.companies.createUser({ companyId: null, email, password: PASSWORD, role: 'operator' });
    const web = new WebClient(ctx.app);
    await web.get('/login');
    expect((await web.post('/login', { email, password: PASSWORD })).headers.location).toBe('/login/enrol');
    expect((await web.get('/operator')).statusCode).toBe(303);
    const key = keyOf((await web.get('/login/enrol')).body)!;
    expect((await web.post('/login/enrol', { code: totpCode(key, t) })).statusCode).toBe(200);
    expect((await web.get('/operator')).statusCode).toBe(200);
  });
});

describe('the session id at each step up', () => {
  const sid = (web: WebClient) => web.cookies.get('claims_session')!;
  /** The cookie of an earlier step, sent alone: it must sign nobody in and hold no sign-in under way. */
  const worthless = async (cookie: string) => {
    const res = await ctx.app.inject({
      method: 'GET',
      url: '/claims',
      headers: { cookie: `claims_session=${cookie}`, accept: 'text/html' },
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toMatch(/^\/login/u);
  };

  it('is new after the second factor: the id that held the half-done sign-in signs nobody in', async () => {
    const { c, key } = await enrolled();
    t += 5 * 60_000;
    const web = await toCodeStep(c.member.email);
    const atCode = sid(web);
    const done = await web.post('/login/code', { code: totpCode(key, t) });
    expect(done.statusCode).toBe(303);
    expect(sid(web)).not.toBe(atCode);
    expect((await web.get('/claims')).statusCode).toBe(200);
    await worthless(atCode);
  });

  it('is new after the second factor is set up during sign-in', async () => {
    const c = await companyWithPeople(ctx);
    await ctx.deps.signIn.setRequireSecondFactor(c.id, true);
    const web = new WebClient(ctx.app);
    await web.get('/login');
    expect((await web.post('/login', { email: c.member.email, password: PASSWORD })).headers.location).toBe('/login/enrol');
    const key = keyOf((await web.get('/login/enrol')).body)!;
    const atEnrol = sid(web);
    const done = await web.post('/login/enrol', { code: totpCode(key, t) });
    expect(done.statusCode).toBe(200);
    expect(sid(web)).not.toBe(atEnrol);
    expect((await web.get('/claims')).statusCode).toBe(200);
    await worthless(atEnrol);
  });

  it('is new after the second factor is set up from Settings, Security; the person stays signed in', async () => {
    const c = await companyWithPeople(ctx);
    const web = new WebClient(ctx.app);
    await web.signIn(c.member.email, PASSWORD, t);
    await web.get('/settings/security');
    const key = keyOf((await web.post('/settings/security/second-factor')).body)!;
    const before = sid(web);
    expect((await web.post('/settings/security/second-factor/confirm', { code: totpCode(key, t) })).statusCode).toBe(200);
    expect(sid(web)).not.toBe(before);
    expect((await web.get('/settings/security')).body).toContain('Recovery codes left: 10 of 10');
    await worthless(before);
  });
});
