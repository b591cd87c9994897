import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { NO_PASSWORD } from '../../src/domain/sign-in/sign-in-service';
import { CLI_ACTOR, NO_ORIGIN } from '../../src/domain/audit/audit';
import { createTestContext, type TestContext } from '../harness';
import { startTestProvider } from '../support/oidc-provider';
import { companyWithPeople, PASSWORD, totpCode, WebClient } from './web-client';

/**
 * Attempts are counted before they are checked (DECISIONS, "Access, hardened"): at most 10 per
 * account and client address in 15 minutes, 100 per account an hour from all addresses; past
 * either, 429 with Retry-After until its window passes. TRUST_PROXY=1 lets each test speak from
 * addresses of its own (X-Forwarded-For), on a clock the test sets.
 */
const HOUR = 60 * 60 * 1000;
// The start of an hour: no window (15 minutes, 1 hour) ends while a test runs, unless it moves the clock.
let t = Math.floor(Date.now() / HOUR) * HOUR + 1000;
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ TRUST_PROXY: '1' }, { now: () => t });
}, 120_000);
afterAll(async () => ctx?.close());

let addresses = 0;
/** A client address no other test uses. */
const newAddress = () => {
  addresses++;
  return `198.51.${Math.floor(addresses / 250)}.${(addresses % 250) + 1}`;
};
const from = (address: string) => new WebClient(ctx.app, { 'x-forwarded-for': address });

const statuses = (answers: { statusCode: number }[]) => {
  const counts: Record<number, number> = {};
  for (const a of answers) counts[a.statusCode] = (counts[a.statusCode] ?? 0) + 1;
  return counts;
};

/** The answers past the budget: 429 with a Retry-After within the window. */
function expectRefused(answers: { statusCode: number; headers: Record<string, unknown> }[], windowSeconds = 15 * 60) {
  for (const a of answers.filter((x) => x.statusCode === 429)) {
    const wait = Number(a.headers['retry-after']);
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(windowSeconds);
  }
}

describe('passwords', () => {
  it('30 wrong passwords sent at once for one account get at most 10 checked; the rest 429 with Retry-After', async () => {
    const c = await companyWithPeople(ctx);
    const web = from(newAddress());
    await web.get('/login');
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_x, i) => web.post('/login', { email: c.member.email, password: `wrong password ${i}` })),
    );
    expect(statuses(answers)).toEqual({ 401: 10, 429: 20 });
    expectRefused(answers);
    // The right password is refused too until the window passes; then it works.
    const right = await web.post('/login', { email: c.member.email, password: PASSWORD });
    expect(right.statusCode).toBe(429);
    const before = t;
    t += Number(right.headers['retry-after']) * 1000;
    try {
      expect((await web.post('/login', { email: c.member.email, password: PASSWORD })).statusCode).toBe(303);
    } finally {
      t = before + 2 * HOUR;
    }
  });

  it('wrong passwords from other addresses do not lock the account for an address of its own', async () => {
    const c = await companyWithPeople(ctx);
    // Ten wrong passwords, one from each of ten addresses.
    for (let i = 0; i < 10; i++) {
      const web = from(newAddress());
      await web.get('/login');
      expect((await web.post('/login', { email: c.member.email, password: `wrong ${i}` })).statusCode).toBe(401);
    }
    // Ten from one address: that address (for this account) is refused.
    const attacker = from(newAddress());
    await attacker.get('/login');
    for (let i = 0; i < 10; i++) {
      expect((await attacker.post('/login', { email: c.member.email, password: `again ${i}` })).statusCode).toBe(401);
    }
    expect((await attacker.post('/login', { email: c.member.email, password: PASSWORD })).statusCode).toBe(429);
    // The person, at an eleventh address, signs in.
    const person = from(newAddress());
    await person.get('/login');
    expect((await person.post('/login', { email: c.member.email, password: PASSWORD })).statusCode).toBe(303);
  });

  it('100 failures an hour from all addresses lock the account for every address until the hour passes', async () => {
    const c = await companyWithPeople(ctx);
    for (let a = 0; a < 10; a++) {
      const web = from(newAddress());
      await web.get('/login');
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_x, i) => web.post('/login', { email: c.member.email, password: `wrong ${a}-${i}` })),
      );
      expect(statuses(answers)).toEqual({ 401: 10 });
    }
    const person = from(newAddress());
    await person.get('/login');
    const locked = await person.post('/login', { email: c.member.email, password: PASSWORD });
    expect(locked.statusCode).toBe(429);
    // Until the hour's window ends (more than the 15 minutes of an address's).
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(15 * 60);
    expectRefused([locked], 60 * 60);
    // Another person is not locked out by it.
    expect((await person.post('/login', { email: c.admin.email, password: PASSWORD })).statusCode).toBe(303);
    const before = t;
    t += Number(locked.headers['retry-after']) * 1000;
    try {
      const later = from(newAddress());
      await later.get('/login');
      expect((await later.post('/login', { email: c.member.email, password: PASSWORD })).statusCode).toBe(303);
    } finally {
      t = before + 2 * HOUR;
    }
  });

  it('a right password gives its count back: more than 10 sign-ins from one address go on', async () => {
    const c = await companyWithPeople(ctx);
    const address = newAddress();
    for (let i = 0; i < 12; i++) {
      const web = from(address);
      await web.get('/login');
      expect((await web.post('/login', { email: c.member.email, password: PASSWORD })).statusCode, `sign-in ${i + 1}`).toBe(303);
    }
  });
});

describe('second factor', () => {
  it('30 wrong codes sent at once get at most 10 checked; the rest, and then the right code, 429 with Retry-After', async () => {
    const c = await companyWithPeople(ctx);
    const address = newAddress();
    // The person sets up a second factor (Settings, Security).
    const setUp = from(address);
    await setUp.signIn(c.member.email, PASSWORD, t);
    await setUp.get('/settings/security');
    const page = await setUp.post('/settings/security/second-factor');
    const key = /id="totp-key"[^>]*value="([A-Z2-7 ]+)"/u.exec(page.body)![1]!.replaceAll(' ', '');
    expect((await setUp.post('/settings/security/second-factor/confirm', { code: totpCode(key, t) })).statusCode).toBe(200);
    t += 60_000;

    const web = from(address);
    await web.get('/login');
    expect((await web.post('/login', { email: c.member.email, password: PASSWORD })).headers.location).toBe('/login/code');
    await web.get('/login/code');
    const right = totpCode(key, t);
    const wrong = (i: number) => String((Number(right) + 1 + i) % 1_000_000).padStart(6, '0');
    const answers = await Promise.all(Array.from({ length: 30 }, (_x, i) => web.post('/login/code', { code: wrong(i) })));
    expect(statuses(answers)).toEqual({ 401: 10, 429: 20 });
    expectRefused(answers);
    expect((await web.post('/login/code', { code: right })).statusCode).toBe(429);
    t += 2 * HOUR;
  });
});

describe('current password (Settings, Security)', () => {
  it('refuses the 11th try, even with the right password, and leaves the password as it was', async () => {
    const c = await companyWithPeople(ctx);
    const web = from(newAddress());
    await web.signIn(c.member.email, PASSWORD, t);
    await web.get('/settings/security');
    const change = (current: string) =>
      web.post('/settings/security/password', {
        current_password: current,
        new_password: 'a new password 1234',
        confirm_password: 'a new password 1234',
      });
    for (let i = 0; i < 10; i++) expect((await change(`not my password ${i}`)).statusCode, `try ${i + 1}`).toBe(422);
    const eleventh = await change(PASSWORD);
    expect(eleventh.statusCode).toBe(429);
    expect(Number(eleventh.headers['retry-after'])).toBeGreaterThan(0);
    expect(eleventh.body).toContain('Too many failed attempts');
    // Not changed: the old password is still the person's.
    expect(await ctx.deps.companies.signIn(c.member.email, PASSWORD)).toBeDefined();
    expect(await ctx.deps.companies.signIn(c.member.email, 'a new password 1234')).toBeUndefined();
    t += 2 * HOUR;
  });
});

describe('a second factor set up from Settings, Security', () => {
  it('refuses the 11th code, even the right one, and leaves the person without a second factor', async () => {
    const c = await companyWithPeople(ctx);
    const web = from(newAddress());
    await web.signIn(c.member.email, PASSWORD, t);
    await web.get('/settings/security');
    const page = await web.post('/settings/security/second-factor', {});
    const key = /id="totp-key"[^>]*value="([A-Z2-7 ]+)"/u.exec(page.body)?.[1]?.replaceAll(' ', '');
    expect(key).toBeDefined();
    const right = totpCode(key!, t);
    const wrong = (i: number) => String((Number(right) + 1 + i) % 1_000_000).padStart(6, '0');
    for (let i = 0; i < 10; i++) {
      expect((await web.post('/settings/security/second-factor/confirm', { code: wrong(i) })).statusCode, `try ${i + 1}`).toBe(422);
    }
    const eleventh = await web.post('/settings/security/second-factor/confirm', { code: right });
    expect(eleventh.statusCode).toBe(429);
    expect(Number(eleventh.headers['retry-after'])).toBeGreaterThan(0);
    expect(eleventh.body).toContain('Too many failed attempts');
    expect((await ctx.deps.dashboard.currentUser(c.member.id))?.secondFactor).toBeFalsy();
    t += 2 * HOUR;
  });
});

describe('equal time', () => {
  it('a sign-in takes the same time whatever the account (unknown, SSO only, reset pending, no password, wrong password)', async () => {
    // scrypt at a cost where it, not the rest of the request, takes the time (as in production).
    const timed = await createTestContext({ TRUST_PROXY: '1' }, { now: () => t, passwordHashCost: 14 });
    let idp: Awaited<ReturnType<typeof startTestProvider>> | undefined;
    try {
      const c = await companyWithPeople(timed);
      const sso = await companyWithPeople(timed);
      // SSO only applies to a domain the operator approved, at a provider discovered when saved.
      idp = await startTestProvider({ clientId: 'x', clientSecret: 's', redirectUri: 'http://sso.test:8080/login/sso/callback' });
      const domain = sso.member.email.split('@')[1]!;
      const cli = { actor: CLI_ACTOR, origin: NO_ORIGIN };
      await timed.deps.signIn.saveSso(
        sso.id,
        { issuer: idp.issuer, clientId: 'x', clientSecret: 's', domains: domain, ssoOnly: true },
        cli,
      );
      await timed.deps.signIn.approveDomain(sso.id, domain, cli);
      const reset = (
        await timed.deps.companies.createUser({ companyId: c.id, email: `reset-${c.id}@x.example`, password: PASSWORD, role: 'member' })
      ).user;
      await timed.deps.signIn.createResetLink(c.id, reset.id);
      // A person who came by single sign-on: no password at all.
      const noPassword = (await timed.deps.repos.companies.insertUser({
        companyId: c.id,
        email: `sso-${c.id}@x.example`,
        passwordHash: NO_PASSWORD,
        role: 'member',
      }))!;
      const states = {
        'unknown email': { email: () => `nobody-${randomBytes(4).toString('hex')}@x.example`, status: 401 },
        'SSO only': { email: () => sso.member.email, status: 403 },
        'reset pending': { email: () => reset.email, status: 401 },
        'no password (SSO person)': { email: () => noPassword.email, status: 401 },
        'wrong password': { email: () => c.member.email, status: 401 },
      };
      const web = new WebClient(timed.app);
      await web.get('/login');
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
      // Each state's time as a share of its round's median: a round that fell on a busy moment of the
      // machine counts as much as a quiet one.
      const shares: Record<string, number[]> = Object.fromEntries(Object.keys(states).map((k) => [k, []]));
      let n = 0;
      // The time is the processor time the server's process spent on the answer (its threads, scrypt's
      // included): the wall clock of a machine shared with other work measures that work too.
      // Sequential, the states in turn, in another order each round (a slow moment of the machine falls on all of them).
      for (let round = 0; round < 25; round++) {
        const order = Object.entries(states).sort(() => Math.random() - 0.5);
        const thisRound: Record<string, number> = {};
        for (const [name, state] of order) {
          n++;
          const started = process.cpuUsage();
          const res = await web.post(
            '/login',
            { email: state.email(), password: 'not the password 42' },
            { headers: { 'x-forwarded-for': `203.0.${Math.floor(n / 250)}.${(n % 250) + 1}` } },
          );
          const used = process.cpuUsage(started);
          const ms = (used.user + used.system) / 1000;
          expect(res.statusCode, name).toBe(state.status);
          thisRound[name] = ms;
        }
        if (round === 0) continue; // the first round warms up (the hash made for nobody)
        const middle = median(Object.values(thisRound));
        for (const [name, ms] of Object.entries(thisRound)) shares[name]!.push(ms / middle);
      }
      const medians = Object.fromEntries(Object.entries(shares).map(([k, v]) => [k, Math.round(median(v) * 1000) / 1000]));
      const values = Object.values(medians);
      // A path that skipped the hash would take a tenth of the time of the others at this cost.
      const spread = (Math.max(...values) - Math.min(...values)) / Math.min(...values);
      expect(spread, JSON.stringify(medians)).toBeLessThan(0.2);
    } finally {
      await idp?.close();
      await timed.close();
    }
  }, 180_000);
});
