import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createLogger } from '../../src/logger';
import { claimBody, createTestContext, docNumber, logSink, type TestContext } from '../harness';
import { csv, postImport, validRow } from '../import-helpers';
import { companyWithPeople, PASSWORD, totpCode, WebClient } from './web-client';

/**
 * No token, password, TOTP secret, reset token or document number in any log line (DECISIONS,
 * "No secret in a URL that is logged"): a run through sign-in with a second factor, a password
 * reset, a token made and used, a claim and an import, every line the service writes at its most
 * verbose level (the production logger's settings) kept, and searched for every secret it made.
 */
const sink = logSink();
let t = Date.now();
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({}, { logger: createLogger('trace', sink.stream), now: () => t });
}, 120_000);
afterAll(async () => ctx?.close());

describe('log lines of a whole run', () => {
  it('hold none of the secrets it made', async () => {
    const secrets: Record<string, string> = {};
    const c = await companyWithPeople(ctx);
    secrets.password = PASSWORD;

    // A wrong password, then the member sets up a second factor and signs in with it.
    const member = new WebClient(ctx.app);
    await member.get('/login');
    secrets.wrongPassword = 'Wrong-Password-5551234';
    expect((await member.post('/login', { email: c.member.email, password: secrets.wrongPassword })).statusCode).toBe(401);
    await member.signIn(c.member.email, PASSWORD, t);
    await member.get('/settings/security');
    const setUp = await member.post('/settings/security/second-factor');
    const shown = /id="totp-key"[^>]*value="([A-Z2-7 ]+)"/u.exec(setUp.body)![1]!;
    secrets.totpKey = shown.replaceAll(' ', '');
    secrets.totpKeyGrouped = shown;
    const confirmed = await member.post('/settings/security/second-factor/confirm', { code: totpCode(secrets.totpKey, t) });
    expect(confirmed.statusCode).toBe(200);
    const codes = [...confirmed.body.matchAll(/<li>([a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4})<\/li>/gu)].map((m) => m[1]!);
    expect(codes).toHaveLength(10);
    codes.forEach((code, i) => (secrets[`recoveryCode${i}`] = code));
    t += 60_000;
    const again = new WebClient(ctx.app);
    await again.get('/login');
    expect((await again.post('/login', { email: c.member.email, password: PASSWORD })).headers.location).toBe('/login/code');
    await again.get('/login/code');
    expect((await again.post('/login/code', { code: totpCode(secrets.totpKey, t) })).statusCode).toBe(303);
    // And once with a recovery code.
    const third = new WebClient(ctx.app);
    await third.get('/login');
    await third.post('/login', { email: c.member.email, password: PASSWORD });
    await third.get('/login/code');
    expect((await third.post('/login/code', { code: codes[0]! })).statusCode).toBe(303);

    // The admin resets another person's password; the person opens the link and sets a new one.
    const person = (
      await ctx.deps.companies.createUser({
        companyId: c.id,
        email: `reset-${c.id}@x.example`,
        password: 'First-Password-777000',
        role: 'member',
      })
    ).user;
    secrets.firstPassword = 'First-Password-777000';
    const admin = new WebClient(ctx.app);
    await admin.signIn(c.admin.email, PASSWORD, t);
    await admin.get('/settings/people');
    const made = await admin.submit(`/settings/people/${person.id}/reset`);
    const link = /id="reset-link"[^>]*value="http:\/\/[^/]+(\/reset\/([A-Za-z0-9_-]+))"/u.exec(made.body)!;
    secrets.resetToken = link[2]!;
    const resetting = new WebClient(ctx.app);
    expect((await resetting.get(link[1]!)).statusCode).toBe(200);
    secrets.newPassword = 'Reset-Password-424242';
    const reset = await resetting.post(link[1]!, { new_password: secrets.newPassword, confirm_password: secrets.newPassword });
    expect(reset.statusCode).toBe(303);
    await new WebClient(ctx.app).signIn(person.email, secrets.newPassword, t);

    // The admin makes a token; it is used for a claim, a read and an import.
    await admin.get('/settings/tokens');
    const created = await admin.submit('/settings/tokens', {
      name: 'log run',
      scopes: ['claims:read', 'claims:write', 'imports'],
      expires: '30',
    });
    secrets.token = /id="token-value"[^>]*value="(csk_[^"]+)"/u.exec(created.body)![1]!;
    const auth = { authorization: `Bearer ${secrets.token}` };
    secrets.claimDocument = docNumber('LOGDOC');
    const claim = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims',
      headers: auth,
      payload: claimBody({}, { id_documents: [{ type: 'passport', number: secrets.claimDocument }] }),
    });
    expect(claim.statusCode).toBe(201);
    expect((await ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: auth })).statusCode).toBe(200);
    const rows = [validRow(), validRow(), validRow({ date_of_birth: 'not a date' })];
    rows.forEach((row, i) => (secrets[`importDocument${i}`] = row.id_number!));
    const imported = await postImport(ctx.app, auth, csv(rows));
    expect(imported.statusCode, imported.body).toBe(200);
    // A token of the old shape that is none, and a wrong one.
    await ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: { authorization: `Bearer csk_${'x'.repeat(43)}` } });
    await ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: { authorization: `Bearer ${secrets.token.slice(0, -1)}0` } });

    const log = sink.lines.join('\n');
    expect(sink.lines.length).toBeGreaterThan(30);
    // The reset link's requests are logged, with its token redacted.
    expect(log).toContain('"url":"/reset/[redacted]"');
    for (const [name, secret] of Object.entries(secrets))
      expect(
        log.includes(secret),
        `${name} in the log: ${sink.lines
          .filter((l) => l.includes(secret))
          .join('\n')
          .slice(0, 2000)}`,
      ).toBe(false);
    expect(log).not.toContain(secrets.token.slice(0, -1));
  }, 120_000);
});
