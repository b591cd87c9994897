import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, type TestContext } from '../harness';
import { companyWithPeople, PASSWORD, totpCode, WebClient } from './web-client';

// Every sign-in, failure, second-factor change and password change is an audit event, in the
// company's trail (the operator's for an email nobody has), holding no password, code or key.
let ctx: TestContext;
let t = Date.now();
beforeAll(async () => {
  ctx = await createTestContext({}, { now: () => t });
});
afterAll(async () => ctx?.close());

const eventsOf = async (companyId: string | null) =>
  (await ctx.deps.repos.audit.list({ companyId, limit: 100 })).map((e) => ({
    action: e.action,
    actor: e.actor.name,
    target: e.target?.name ?? null,
    ip: e.ip,
    request_id: e.request_id,
  }));

describe('sign-in audit events', () => {
  it("records sign-ins, failures, second-factor and password changes, and the company's sign-in settings", async () => {
    const c = await companyWithPeople(ctx);
    const member = new WebClient(ctx.app);
    await member.get('/login');
    expect((await member.post('/login', { email: c.member.email, password: 'not the password 1' })).statusCode).toBe(401);
    await member.signIn(c.member.email, PASSWORD, t);
    await member.get('/settings/security');
    const setup = await member.post('/settings/security/second-factor');
    const key = /id="totp-key"[^>]*value="([A-Z2-7 ]+)"/u.exec(setup.body)![1]!.replaceAll(' ', '');
    await member.post('/settings/security/second-factor/confirm', { code: totpCode(key, t) });
    await member.get('/settings/security');
    t += 60_000;
    await member.post('/settings/security/second-factor/disable', { code: totpCode(key, t) });
    const next = 'another good passphrase 7';
    await member.get('/settings/security');
    await member.post('/settings/security/password', { current_password: PASSWORD, new_password: next, confirm_password: next });
    const admin = new WebClient(ctx.app);
    await admin.signIn(c.admin.email, PASSWORD, t);
    await admin.get('/settings/sign-in');
    await admin.post('/settings/sign-in/second-factor', { require_second_factor: 'on' });

    // The sign-in events (the company, its people and its token were created before, with events of their own).
    const events = (await eventsOf(c.id)).filter((e) => !['company.created', 'person.created', 'token.created'].includes(e.action));
    const m = c.member.email;
    expect(events.map((e) => [e.action, e.actor, e.target]).reverse()).toEqual([
      ['person.sign_in_failed', m, m],
      ['person.signed_in', m, m],
      ['person.mfa_enabled', m, m],
      ['person.mfa_disabled', m, m],
      ['person.password_changed', m, m],
      ['person.signed_in', c.admin.email, c.admin.email],
      ['company.settings_changed', c.admin.email, 'second factor required'],
    ]);
    for (const e of events) {
      expect(e.ip).toBe('127.0.0.1');
      expect(e.request_id).toEqual(expect.any(String));
    }
    const raw = JSON.stringify(await ctx.deps.db.query('SELECT * FROM audit_events WHERE company_id = $1', [c.id]));
    for (const secret of [PASSWORD, next, key, 'not the password 1']) expect(raw).not.toContain(secret);
  });

  it("records an admin's reset link as a password change by the admin, and its use by the person", async () => {
    const c = await companyWithPeople(ctx);
    const admin = new WebClient(ctx.app);
    await admin.signIn(c.admin.email, PASSWORD, t);
    await admin.get('/settings/people');
    const res = await admin.submit(`/settings/people/${c.member.id}/reset`);
    const link = /id="reset-link"[^>]*value="http:\/\/[^/]+(\/reset\/[A-Za-z0-9_-]+)"/u.exec(res.body)![1]!;
    const person = new WebClient(ctx.app);
    await person.get(link);
    await person.post(link, { new_password: 'a reset passphrase 2026', confirm_password: 'a reset passphrase 2026' });
    const events = (await eventsOf(c.id)).filter((e) => e.action === 'person.password_changed');
    expect(events.map((e) => [e.actor, e.target]).reverse()).toEqual([
      [c.admin.email, c.member.email],
      [c.member.email, c.member.email],
    ]);
  });

  it("puts a failed sign-in of an email nobody has in the operator's trail", async () => {
    const web = new WebClient(ctx.app);
    await web.get('/login');
    const email = `nobody-${Math.random().toString(36).slice(2, 8)}@nowhere.example`;
    await web.post('/login', { email, password: 'whatever it is 1' });
    const events = (await eventsOf(null)).filter((e) => e.target === email);
    expect(events).toEqual([expect.objectContaining({ action: 'person.sign_in_failed', actor: email })]);
  });
});
