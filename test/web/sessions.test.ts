import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, type TestContext } from '../harness';
import { companyWithPeople, PASSWORD, WebClient } from './web-client';

// Sessions that end: idle (SESSION_IDLE_MINUTES, default 30) and 8 hours in all, on a clock the
// test sets; a password change ends the person's other sessions; an admin's one-time reset link.
let ctx: TestContext;
let t = Date.now();
beforeAll(async () => {
  ctx = await createTestContext({}, { now: () => t });
});
afterAll(async () => ctx?.close());

const MIN = 60_000;

describe('a dashboard session', () => {
  it('ends after 30 minutes without a request, and activity keeps it going', async () => {
    const c = await companyWithPeople(ctx);
    const web = new WebClient(ctx.app);
    await web.signIn(c.member.email, PASSWORD, t);
    t += 29 * MIN;
    expect((await web.get('/claims')).statusCode).toBe(200);
    t += 29 * MIN;
    expect((await web.get('/claims')).statusCode).toBe(200);
    t += 30 * MIN;
    const out = await web.get('/claims');
    expect(out.statusCode).toBe(303);
    expect(out.headers.location).toBe('/login?next=%2Fclaims');
    const login = await web.get('/login');
    expect(login.body).toContain('You were signed out after 30 minutes without activity');
  });

  it('follows SESSION_IDLE_MINUTES', async () => {
    const other = await createTestContext({ SESSION_IDLE_MINUTES: '5' }, { now: () => t });
    try {
      const c = await companyWithPeople(other);
      const web = new WebClient(other.app);
      await web.signIn(c.member.email, PASSWORD, t);
      t += 4 * MIN;
      expect((await web.get('/claims')).statusCode).toBe(200);
      t += 5 * MIN;
      expect((await web.get('/claims')).statusCode).toBe(303);
    } finally {
      await other.close();
    }
  });

  it('ends 8 hours after sign-in however active', async () => {
    const c = await companyWithPeople(ctx);
    const web = new WebClient(ctx.app);
    await web.signIn(c.member.email, PASSWORD, t);
    for (let i = 0; i < 23; i++) {
      t += 20 * MIN;
      expect((await web.get('/claims')).statusCode, `after ${(i + 1) * 20} minutes`).toBe(200);
    }
    t += 20 * MIN;
    expect((await web.get('/claims')).statusCode).toBe(303);
    expect((await web.get('/login')).body).toContain('a sign-in lasts 8 hours');
  });
});

describe("changing one's password", () => {
  it("needs the current password and ends the person's other sessions", async () => {
    const c = await companyWithPeople(ctx);
    const here = new WebClient(ctx.app);
    await here.signIn(c.member.email, PASSWORD, t);
    const elsewhere = new WebClient(ctx.app);
    await elsewhere.signIn(c.member.email, PASSWORD, t);
    const admin = new WebClient(ctx.app);
    await admin.signIn(c.admin.email, PASSWORD, t);
    await here.get('/settings/security');
    const next = 'a brand new passphrase 42';
    const wrong = await here.post('/settings/security/password', {
      current_password: 'not it at all 123',
      new_password: next,
      confirm_password: next,
    });
    expect(wrong.statusCode).toBe(422);
    expect(wrong.body).toContain('The current password is not right.');
    const mismatch = await here.post('/settings/security/password', {
      current_password: PASSWORD,
      new_password: next,
      confirm_password: `${next}!`,
    });
    expect(mismatch.statusCode).toBe(422);
    const short = await here.post('/settings/security/password', {
      current_password: PASSWORD,
      new_password: 'short',
      confirm_password: 'short',
    });
    expect(short.statusCode).toBe(422);
    expect((await elsewhere.get('/claims')).statusCode).toBe(200);
    const done = await here.post('/settings/security/password', { current_password: PASSWORD, new_password: next, confirm_password: next });
    expect(done.statusCode).toBe(303);
    expect((await here.get('/claims')).statusCode).toBe(200);
    expect((await elsewhere.get('/claims')).statusCode).toBe(303);
    // Another person's session is untouched.
    expect((await admin.get('/claims')).statusCode).toBe(200);
    const old = new WebClient(ctx.app);
    await old.get('/login');
    expect((await old.post('/login', { email: c.member.email, password: PASSWORD })).statusCode).toBe(401);
    await new WebClient(ctx.app).signIn(c.member.email, next, t);
  });
});

describe("an admin's password reset", () => {
  async function resetLink(c: Awaited<ReturnType<typeof companyWithPeople>>, admin: WebClient) {
    await admin.get('/settings/people');
    const made = await admin.post(`/settings/people/${c.member.id}/reset`);
    expect(made.statusCode).toBe(303);
    const res = await admin.get(made.headers.location as string);
    expect(res.statusCode).toBe(200);
    const link = /id="reset-link"[^>]*value="http:\/\/[^/]+(\/reset\/[A-Za-z0-9_-]+)"/u.exec(res.body)?.[1];
    expect(link).toBeDefined();
    return link!;
  }

  it('is a one-time link valid one hour, shown to the admin; the old password and sessions end', async () => {
    const c = await companyWithPeople(ctx);
    const member = new WebClient(ctx.app);
    await member.signIn(c.member.email, PASSWORD, t);
    const admin = new WebClient(ctx.app);
    await admin.signIn(c.admin.email, PASSWORD, t);
    // A member cannot make one.
    await member.get('/settings/people');
    expect((await member.post(`/settings/people/${c.admin.id}/reset`)).statusCode).toBe(403);
    const link = await resetLink(c, admin);
    expect((await member.get('/claims')).statusCode).toBe(303);
    const old = new WebClient(ctx.app);
    await old.get('/login');
    expect((await old.post('/login', { email: c.member.email, password: PASSWORD })).statusCode).toBe(401);
    // Only a hash of the link's token is stored.
    const token = link.split('/').pop()!;
    const rows = await ctx.deps.db.query<{ token_hash: string }>('SELECT token_hash FROM password_resets');
    expect(rows.map((r) => r.token_hash).join()).not.toContain(token);

    const person = new WebClient(ctx.app);
    t += 59 * MIN;
    const form = await person.get(link);
    expect(form.statusCode).toBe(200);
    expect(form.headers['referrer-policy']).toBe('no-referrer');
    const next = 'a reset passphrase 2026';
    expect((await person.post(link, { new_password: next, confirm_password: 'different one 2026' })).statusCode).toBe(422);
    const done = await person.post(link, { new_password: next, confirm_password: next });
    expect(done.statusCode).toBe(303);
    expect(done.headers.location).toBe('/login?reset=1');
    await new WebClient(ctx.app).signIn(c.member.email, next, t);
    // Once only.
    expect((await person.get(link)).statusCode).toBe(410);
    expect((await person.post(link, { new_password: 'yet another one 2026', confirm_password: 'yet another one 2026' })).statusCode).toBe(
      410,
    );
    const again = new WebClient(ctx.app);
    await again.get('/login');
    expect((await again.post(link, { new_password: 'yet another one 2026', confirm_password: 'yet another one 2026' })).statusCode).toBe(
      410,
    );
  });

  it('does not work after an hour', async () => {
    const c = await companyWithPeople(ctx);
    const admin = new WebClient(ctx.app);
    await admin.signIn(c.admin.email, PASSWORD, t);
    const link = await resetLink(c, admin);
    t += 61 * MIN;
    const person = new WebClient(ctx.app);
    const page = await person.get(link);
    expect(page.statusCode).toBe(410);
    expect(page.body).toContain('more than an hour old');
    await person.get('/login');
    expect(
      (await person.post(link, { new_password: 'a reset passphrase 2026', confirm_password: 'a reset passphrase 2026' })).statusCode,
    ).toBe(410);
  });
});

describe('sign-in throttling', () => {
  it('counts failures per email whatever X-Forwarded-For an untrusted peer writes', async () => {
    const c = await companyWithPeople(ctx);
    for (let i = 0; i < 10; i++) {
      const web = new WebClient(ctx.app, { 'x-forwarded-for': `198.51.100.${i + 1}` });
      await web.get('/login');
      expect((await web.post('/login', { email: c.member.email, password: `wrong password ${i}` })).statusCode).toBe(401);
    }
    const web = new WebClient(ctx.app, { 'x-forwarded-for': '203.0.113.99' });
    await web.get('/login');
    const limited = await web.post('/login', { email: c.member.email, password: PASSWORD });
    expect(limited.statusCode).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    // The window passes.
    t += 16 * MIN;
    await web.get('/login');
    expect((await web.post('/login', { email: c.member.email, password: PASSWORD })).statusCode).toBe(303);
  });

  it("counts failures per address (the peer's, not X-Forwarded-For's) whatever the email", async () => {
    t += 16 * MIN;
    for (let i = 0; i < 30; i++) {
      const web = new WebClient(ctx.app, { 'x-forwarded-for': `198.51.100.${i + 1}` });
      await web.get('/login');
      expect((await web.post('/login', { email: `nobody-${i}@nowhere.example`, password: 'wrong password' })).statusCode).toBe(401);
    }
    const c = await companyWithPeople(ctx);
    const web = new WebClient(ctx.app, { 'x-forwarded-for': '203.0.113.100' });
    await web.get('/login');
    expect((await web.post('/login', { email: c.member.email, password: PASSWORD })).statusCode).toBe(429);
    t += 16 * MIN;
  });

  it('counts wrong second-factor codes too', async () => {
    t += 16 * MIN;
    const email = `operator-${Math.random().toString(36).slice(2, 8)}@registry.example`;
    await ctx.deps.companies.createUser({ companyId: null, email, password: PASSWORD, role: 'operator' });
    await new WebClient(ctx.app).signIn(email, PASSWORD, t);
    const web = new WebClient(ctx.app);
    await web.get('/login');
    await web.post('/login', { email, password: PASSWORD });
    await web.get('/login/code');
    for (let i = 0; i < 10; i++) expect((await web.post('/login/code', { code: '000000' })).statusCode).toBe(401);
    expect((await web.post('/login/code', { code: '000000' })).statusCode).toBe(429);
    t += 16 * MIN;
  });
});
