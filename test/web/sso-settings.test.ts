import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, type TestContext } from '../harness';
import { startTestProvider } from '../support/oidc-provider';
import { companyWithPeople, PASSWORD, signedIn, WebClient } from './web-client';

// A company's single sign-on settings through the dashboard: its admin (or the operator) saves
// them; the issuer is https to a public address (the harness sets OIDC_ALLOW_PRIVATE=true for
// its provider on 127.0.0.2; one context here runs without it); the provider's discovery
// document is fetched at save; the client secret is stored sealed, never shown again. A domain
// the admin asks for covers sign-ins only once the operator approves it.
let ctx: TestContext;
let idp: Awaited<ReturnType<typeof startTestProvider>>;
const SECRET = 'the-client-secret-of-the-provider-1234567890';
beforeAll(async () => {
  ctx = await createTestContext();
  idp = await startTestProvider({
    clientId: 'claims-registry',
    clientSecret: SECRET,
    redirectUri: 'http://localhost:80/login/sso/callback',
  });
}, 180_000);
afterAll(async () => {
  await idp?.close();
  await ctx?.close();
});

const form = (over: Record<string, string> = {}) => ({
  issuer: idp.issuer,
  client_id: 'claims-registry',
  client_secret: SECRET,
  domains: 'alpha-sso.example, @Beta-SSO.example',
  ...over,
});
const tag = () => Math.random().toString(36).slice(2, 8);
const domainOf = (email: string) => email.split('@')[1]!;

async function operator() {
  const email = `operator-${tag()}@registry-${tag()}.example`;
  await ctx.deps.companies.createUser({ companyId: null, email, password: PASSWORD, role: 'operator' });
  return { email, web: await signedIn(ctx, email) };
}

const domainEvents = (companyId: string) =>
  ctx.deps.db.query<{ action: string; actor_name: string; target_name: string }>(
    `SELECT action, actor_name, target_name FROM audit_events
      WHERE company_id = $1 AND action LIKE 'company.sso_domain_%' ORDER BY created_at, action`,
    [companyId],
  );

describe('single sign-on settings', () => {
  it('are saved by the company admin, show the redirect URL, keep the discovery document, and never show the secret again', async () => {
    const c = await companyWithPeople(ctx);
    const admin = await signedIn(ctx, c.admin.email);
    const page = await admin.get('/settings/sign-in');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('value="http://localhost:80/login/sso/callback"');
    const domains = `alpha-${tag()}.example, @Beta-${tag()}.example`;
    const saved = await admin.post('/settings/sign-in/sso', { ...form({ domains }), sso_only: 'on' });
    expect(saved.statusCode, saved.body).toBe(303);
    const after = await admin.get('/settings/sign-in');
    expect(after.body).toContain(`value="${idp.issuer}"`);
    // Asked for, not approved: the page says so.
    expect(after.body.match(/data-domain-status="asked"/gu)).toHaveLength(2);
    expect(after.body).not.toContain(SECRET);
    const stored = await ctx.deps.db.query<{ row: string; issuer: string }>(
      "SELECT row_to_json(s)::text AS row, metadata->>'issuer' AS issuer FROM company_sso s WHERE company_id = $1",
      [c.id],
    );
    expect(stored[0]!.row).not.toContain(SECRET);
    expect(stored[0]!.issuer).toBe(idp.issuer);
    const settings = await ctx.deps.signIn.companySettings(c.id);
    expect(settings.sso).toMatchObject({ issuer: idp.issuer, clientId: 'claims-registry', ssoOnly: true, approvedDomains: [] });
    expect(settings.sso!.domains).toHaveLength(2);
    // A blank secret keeps the stored one.
    expect((await admin.post('/settings/sign-in/sso', form({ domains, client_secret: '' }))).statusCode).toBe(303);
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

  it('refuse an issuer that is no URL, or with a query, naming the field; and a provider that cannot be reached or is no OpenID provider (422 saying why)', async () => {
    const c = await companyWithPeople(ctx);
    const admin = await signedIn(ctx, c.admin.email);
    await admin.get('/settings/sign-in');
    for (const issuer of ['ftp://x.example', 'not a url', 'https://login.example.com/?a=b']) {
      const res = await admin.post('/settings/sign-in/sso', form({ issuer, domains: `${tag()}.example` }));
      expect(res.statusCode, issuer).toBe(422);
      expect(res.body, issuer).toMatch(/id="sso-issuer-error">The issuer must/u);
    }
    // Nobody listens there.
    const closed = await admin.post('/settings/sign-in/sso', form({ issuer: 'http://127.0.0.1:1', domains: `${tag()}.example` }));
    expect(closed.statusCode).toBe(422);
    expect(closed.body).toContain('id="sso-issuer-error">The provider at http://127.0.0.1:1 could not be reached.');
    // Something answers, but not with an OpenID configuration for that issuer.
    const wrong = await admin.post('/settings/sign-in/sso', form({ issuer: `${idp.issuer}/elsewhere`, domains: `${tag()}.example` }));
    expect(wrong.statusCode).toBe(422);
    expect(wrong.body).toContain(`The provider at ${idp.issuer}/elsewhere did not answer with an OpenID configuration`);
    expect((await ctx.deps.signIn.companySettings(c.id)).sso).toBeNull();
    const missing = await admin.post('/settings/sign-in/sso', {
      issuer: idp.issuer,
      client_id: '',
      client_secret: '',
      domains: 'not a domain!',
    });
    expect(missing.statusCode).toBe(422);
    expect(missing.body).toContain('id="sso-client_id-error"');
    expect(missing.body).toContain('id="sso-domains-error"');
  });

  it('are set by the operator for any company', async () => {
    const c = await companyWithPeople(ctx);
    const op = await operator();
    const page = await op.web.get(`/operator/companies/${c.id}/sign-in`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('/login/sso/callback');
    const saved = await op.web.post(`/operator/companies/${c.id}/sign-in/sso`, form({ domains: `op-${c.id.slice(0, 8)}.example` }));
    expect(saved.statusCode).toBe(303);
    expect((await op.web.post(`/operator/companies/${c.id}/sign-in/second-factor`, { require_second_factor: 'on' })).statusCode).toBe(303);
    expect((await ctx.deps.signIn.companySettings(c.id)).requireSecondFactor).toBe(true);
    // A company's admin cannot use the operator's pages.
    const admin = await signedIn(ctx, c.admin.email);
    expect((await admin.get(`/operator/companies/${c.id}/sign-in`)).statusCode).toBe(403);
  });
});

describe('single sign-on domains', () => {
  it("refuse a domain that another company's person uses, that another company asked for, or that an operator's email uses, naming it (422)", async () => {
    const a = await companyWithPeople(ctx);
    const b = await companyWithPeople(ctx);
    const admin = await signedIn(ctx, b.admin.email);
    await admin.get('/settings/sign-in');
    // A's people's domain.
    const used = await admin.post('/settings/sign-in/sso', form({ domains: domainOf(a.member.email) }));
    expect(used.statusCode).toBe(422);
    expect(used.body).toContain(`${domainOf(a.member.email)}: people outside your company have email addresses of this domain.`);
    // A domain A asked for (nobody uses it yet).
    const asked = `asked-${tag()}.example`;
    const adminA = await signedIn(ctx, a.admin.email);
    await adminA.get('/settings/sign-in');
    expect((await adminA.post('/settings/sign-in/sso', form({ domains: asked }))).statusCode).toBe(303);
    const taken = await admin.post('/settings/sign-in/sso', form({ domains: asked }));
    expect(taken.statusCode).toBe(422);
    expect(taken.body).toContain(`${asked}: another company has asked for this domain or holds it.`);
    // The operator's domain.
    const op = await operator();
    const ops = await admin.post('/settings/sign-in/sso', form({ domains: domainOf(op.email) }));
    expect(ops.statusCode).toBe(422);
    expect(ops.body).toContain(domainOf(op.email));
    expect((await ctx.deps.signIn.companySettings(b.id)).sso).toBeNull();
    expect(await domainEvents(b.id)).toEqual([]);
  });

  it('do nothing until approved: passwords work, "SSO only" does not apply, the email step asks for the password', async () => {
    const c = await companyWithPeople(ctx);
    const domain = domainOf(c.member.email);
    const admin = await signedIn(ctx, c.admin.email);
    await admin.get('/settings/sign-in');
    expect((await admin.post('/settings/sign-in/sso', { ...form({ domains: domain }), sso_only: 'on' })).statusCode).toBe(303);
    expect(await domainEvents(c.id)).toEqual([{ action: 'company.sso_domain_requested', actor_name: c.admin.email, target_name: domain }]);
    const web = new WebClient(ctx.app);
    await web.get('/login');
    const step = await web.post('/login', { email: c.member.email });
    expect(step.statusCode).toBe(200);
    expect(step.body).toContain('name="password"');
    expect(step.body).not.toContain(idp.issuer);
    const res = await web.post('/login', { email: c.member.email, password: PASSWORD });
    expect(res.statusCode).toBe(303);
    expect((await web.get('/claims')).statusCode).toBe(200);
  });

  it('cover sign-ins once the operator approves them on the company page, and no more once removed; each act on record', async () => {
    const c = await companyWithPeople(ctx);
    const domain = domainOf(c.member.email);
    const admin = await signedIn(ctx, c.admin.email);
    await admin.get('/settings/sign-in');
    expect((await admin.post('/settings/sign-in/sso', { ...form({ domains: domain }), sso_only: 'on' })).statusCode).toBe(303);
    const op = await operator();
    const page = await op.web.get(`/operator/companies/${c.id}`);
    expect(page.body).toContain(`data-sso-domain="${domain}"`);
    expect(page.body).toContain('asked, waiting for approval');
    // A form without its CSRF token changes nothing.
    expect((await op.web.post(`/operator/companies/${c.id}/sso-domains/approve`, { domain }, { csrf: null })).statusCode).toBe(403);
    expect((await ctx.deps.signIn.companySettings(c.id)).sso!.approvedDomains).toEqual([]);
    // A company's admin cannot approve its own.
    expect((await admin.post(`/operator/companies/${c.id}/sso-domains/approve`, { domain })).statusCode).toBe(403);
    const approved = await op.web.post(`/operator/companies/${c.id}/sso-domains/approve`, { domain });
    expect(approved.statusCode).toBe(303);
    expect(approved.headers.location).toBe(`/operator/companies/${c.id}?domain=approved`);
    expect((await ctx.deps.signIn.companySettings(c.id)).sso!.approvedDomains).toEqual([domain]);
    // Now the domain is the provider's: "SSO only" refuses the password, the email step goes there.
    const web = new WebClient(ctx.app);
    await web.get('/login');
    const refused = await web.post('/login', { email: c.member.email, password: PASSWORD });
    expect(refused.statusCode).toBe(403);
    expect(refused.body).toContain('Your company signs in only through its own sign-in page');
    const step = await web.post('/login', { email: c.member.email });
    expect(step.statusCode).toBe(200);
    expect(step.body).toContain(`url=${idp.issuer}/auth?`);
    // Removed: passwords again.
    await op.web.get(`/operator/companies/${c.id}`);
    const removed = await op.web.post(`/operator/companies/${c.id}/sso-domains/remove`, { domain });
    expect(removed.headers.location).toBe(`/operator/companies/${c.id}?domain=removed`);
    expect((await ctx.deps.signIn.companySettings(c.id)).sso!.domains).toEqual([]);
    await web.get('/login');
    expect((await web.post('/login', { email: c.member.email, password: PASSWORD })).statusCode).toBe(303);
    expect(await domainEvents(c.id)).toEqual([
      { action: 'company.sso_domain_requested', actor_name: c.admin.email, target_name: domain },
      { action: 'company.sso_domain_approved', actor_name: op.email, target_name: domain },
      { action: 'company.sso_domain_removed', actor_name: op.email, target_name: domain },
    ]);
  });

  it('are not approved while someone outside the company uses them (422 naming the domain)', async () => {
    const a = await companyWithPeople(ctx);
    const b = await companyWithPeople(ctx);
    const domain = `later-${tag()}.example`;
    const admin = await signedIn(ctx, a.admin.email);
    await admin.get('/settings/sign-in');
    expect((await admin.post('/settings/sign-in/sso', form({ domains: domain }))).statusCode).toBe(303);
    // Meanwhile B's admin adds a person of that domain.
    await ctx.deps.companies.createUser({ companyId: b.id, email: `someone@${domain}`, password: PASSWORD, role: 'member' });
    const op = await operator();
    await op.web.get(`/operator/companies/${a.id}`);
    const res = await op.web.post(`/operator/companies/${a.id}/sso-domains/approve`, { domain });
    expect(res.statusCode).toBe(422);
    expect(res.body).toContain(`${domain}: people outside your company have email addresses of this domain.`);
    expect((await ctx.deps.signIn.companySettings(a.id)).sso!.approvedDomains).toEqual([]);
  });
});

describe('the provider address without OIDC_ALLOW_PRIVATE', () => {
  let strict: TestContext;
  beforeAll(async () => {
    strict = await createTestContext({ OIDC_ALLOW_PRIVATE: 'false' });
  }, 180_000);
  afterAll(async () => strict?.close());

  it('must be https to a public address: http, loopback, private and link-local addresses are refused before any request', async () => {
    const c = await companyWithPeople(strict);
    const admin = await signedIn(strict, c.admin.email);
    await admin.get('/settings/sign-in');
    const before = idp.discoveryRequests;
    const https = idp.issuer.replace('http:', 'https:');
    for (const [issuer, message] of [
      ['http://169.254.169.254/latest/meta-data', 'The issuer must use https.'],
      [idp.issuer, 'The issuer must use https.'],
      ['https://169.254.169.254/latest', 'The issuer must be a public address: 169.254.169.254'],
      [https, `The issuer must be a public address: ${new URL(https).hostname}`],
      ['https://10.1.2.3', 'The issuer must be a public address: 10.1.2.3'],
      ['https://[fd00::1]', 'The issuer must be a public address: [fd00::1]'],
      ['https://0.0.0.0', 'The issuer must be a public address: 0.0.0.0'],
      // A name is resolved, and the address it resolves to is judged.
      ['https://localhost:1', 'The issuer must be a public address: localhost'],
    ] as const) {
      const res = await admin.post('/settings/sign-in/sso', form({ issuer, domains: `${tag()}.example` }));
      expect(res.statusCode, issuer).toBe(422);
      expect(res.body, issuer).toContain(`id="sso-issuer-error">${message}`);
    }
    expect(idp.discoveryRequests).toBe(before);
    expect((await strict.deps.signIn.companySettings(c.id)).sso).toBeNull();
  });
});
