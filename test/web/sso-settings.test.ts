import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { checkIssuer } from '../../src/domain/sign-in/sign-in-service';
import { createTestContext, type TestContext } from '../harness';
import { companyWithPeople, PASSWORD, signedIn, WebClient } from './web-client';

// A company's single sign-on settings through the dashboard: its admin or the operator; the
// issuer https (plain http on loopback only); the client secret stored sealed, never shown again;
// the redirect URL shown; "SSO only" refusing passwords.
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx?.close());

const SECRET = 'the-client-secret-of-the-provider-1234567890';
const form = (over: Record<string, string> = {}) => ({
  issuer: 'https://login.example.com/realms/staff',
  client_id: 'claims-registry',
  client_secret: SECRET,
  domains: 'alpha-sso.example, @Beta-SSO.example',
  ...over,
});

describe('single sign-on settings', () => {
  it('are saved by the company admin, show the redirect URL, and never show the secret again', async () => {
    const c = await companyWithPeople(ctx);
    const admin = await signedIn(ctx, c.admin.email);
    const page = await admin.get('/settings/sign-in');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('value="http://localhost:80/login/sso/callback"');
    const saved = await admin.post('/settings/sign-in/sso', { ...form(), sso_only: 'on' });
    expect(saved.statusCode).toBe(303);
    const after = await admin.get('/settings/sign-in');
    expect(after.body).toContain('value="https://login.example.com/realms/staff"');
    expect(after.body).toContain('beta-sso.example');
    expect(after.body).not.toContain(SECRET);
    const stored = JSON.stringify(await ctx.deps.db.query('SELECT * FROM company_sso WHERE company_id = $1', [c.id]));
    expect(stored).not.toContain(SECRET);
    expect(await ctx.deps.signIn.companySettings(c.id)).toEqual({
      requireSecondFactor: false,
      sso: {
        issuer: 'https://login.example.com/realms/staff',
        clientId: 'claims-registry',
        ssoOnly: true,
        domains: ['alpha-sso.example', 'beta-sso.example'],
      },
    });
    // A blank secret keeps the stored one.
    expect((await admin.post('/settings/sign-in/sso', form({ client_secret: '' }))).statusCode).toBe(303);
    expect((await ctx.deps.signIn.ssoForCompany(c.id))!.clientSecret()).toBe(SECRET);
    // A member may not see or change them.
    const member = await signedIn(ctx, c.member.email);
    expect((await member.get('/settings/sign-in')).statusCode).toBe(403);
    await member.get('/settings/security');
    expect((await member.post('/settings/sign-in/sso', form())).statusCode).toBe(403);
    await admin.get('/settings/sign-in');
    expect((await admin.post('/settings/sign-in/sso/remove')).statusCode).toBe(303);
    expect((await ctx.deps.signIn.companySettings(c.id)).sso).toBeNull();
  });

  it('refuse an issuer that is not https, except on a loopback address, naming the field', async () => {
    const c = await companyWithPeople(ctx);
    const admin = await signedIn(ctx, c.admin.email);
    await admin.get('/settings/sign-in');
    for (const issuer of [
      'http://login.example.com',
      'http://10.0.0.5:8080',
      'http://localhost.example.com',
      'ftp://x.example',
      'not a url',
    ]) {
      const res = await admin.post('/settings/sign-in/sso', form({ issuer }));
      expect(res.statusCode, issuer).toBe(422);
      expect(res.body, issuer).toMatch(/id="sso-issuer-error">The issuer must/u);
    }
    for (const issuer of ['http://127.0.0.1:9000', 'http://127.5.6.7/realms/x', 'http://[::1]:8080']) {
      expect(typeof checkIssuer(issuer), issuer).toBe('string');
      expect((await admin.post('/settings/sign-in/sso', form({ issuer }))).statusCode, issuer).toBe(303);
    }
    const missing = await admin.post('/settings/sign-in/sso', {
      issuer: 'https://login.example.com',
      client_id: '',
      client_secret: '',
      domains: 'not a domain!',
    });
    expect(missing.statusCode).toBe(422);
    expect(missing.body).toContain('id="sso-client_id-error"');
    expect(missing.body).toContain('id="sso-domains-error"');
  });

  it('give a domain to one company only', async () => {
    const a = await companyWithPeople(ctx);
    const b = await companyWithPeople(ctx);
    await ctx.deps.signIn.saveSso(a.id, {
      issuer: 'https://a.example',
      clientId: 'a',
      clientSecret: 's',
      domains: 'shared-domain.example',
      ssoOnly: false,
    });
    const admin = await signedIn(ctx, b.admin.email);
    await admin.get('/settings/sign-in');
    const res = await admin.post('/settings/sign-in/sso', form({ domains: 'shared-domain.example' }));
    expect(res.statusCode).toBe(422);
    expect(res.body).toMatch(/Another company(&#39;|')s sign-in covers shared-domain\.example\./u);
  });

  it('are set by the operator for any company', async () => {
    const c = await companyWithPeople(ctx);
    const email = `operator-${Math.random().toString(36).slice(2, 8)}@registry.example`;
    await ctx.deps.companies.createUser({ companyId: null, email, password: PASSWORD, role: 'operator' });
    const op = await signedIn(ctx, email);
    const page = await op.get(`/operator/companies/${c.id}/sign-in`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('/login/sso/callback');
    expect((await op.post(`/operator/companies/${c.id}/sign-in/sso`, form({ domains: `op-${c.id.slice(0, 8)}.example` }))).statusCode).toBe(
      303,
    );
    expect((await op.post(`/operator/companies/${c.id}/sign-in/second-factor`, { require_second_factor: 'on' })).statusCode).toBe(303);
    expect((await ctx.deps.signIn.companySettings(c.id)).requireSecondFactor).toBe(true);
    // A company's admin cannot use the operator's pages.
    const admin = await signedIn(ctx, c.admin.email);
    expect((await admin.get(`/operator/companies/${c.id}/sign-in`)).statusCode).toBe(403);
  });

  it('with "SSO only", refuse the password of the company\'s people; the email step sends them to the provider', async () => {
    const c = await companyWithPeople(ctx);
    const domain = c.member.email.split('@')[1]!;
    await ctx.deps.signIn.saveSso(c.id, {
      issuer: 'https://idp.invalid',
      clientId: 'x',
      clientSecret: 's',
      domains: domain,
      ssoOnly: true,
    });
    const web = new WebClient(ctx.app);
    await web.get('/login');
    const res = await web.post('/login', { email: c.member.email, password: PASSWORD });
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain('Your company signs in only through its own sign-in page');
    // The provider cannot be reached here: the person is told, nothing else happens.
    const step = await web.post('/login', { email: c.member.email });
    expect(step.statusCode).toBe(502);
    expect(step.body).toMatch(/Your company(&#39;|')s sign-in page cannot be reached just now/u);
  });
});
