import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, type TestContext } from '../harness';
import { startTestProvider } from '../support/oidc-provider';
import { companyWithPeople, PASSWORD, signedIn, WebClient } from './web-client';

// A sign-in by OpenID Connect through HTTP against a real provider (oidc-provider on 127.0.0.2,
// its sign-in and consent pages driven over HTTP): the provider's document comes from the
// database, never fetched at a sign-in; `email_verified` must be true; the session id is new
// after the callback. The dashboard is reached as http://sso.test:8080 (the Host header), the
// address the provider sends the browser back to.
const HOST = 'sso.test:8080';
const REDIRECT = `http://${HOST}/login/sso/callback`;
const CLIENT_ID = 'claims-registry';
const SECRET = 'a-client-secret-from-the-provider-0123456789';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
}, 180_000);
afterAll(async () => ctx?.close());

const tag = () => Math.random().toString(36).slice(2, 8);
const browser = () => new WebClient(ctx.app, { host: HOST });
const peopleOf = (email: string) =>
  ctx.deps.db.query<{ role: string; company_id: string }>('SELECT role, company_id FROM users WHERE lower(email) = lower($1)', [email]);

/** A company whose admin saved SSO with `idp` for `domain`, approved by the operator. */
async function companyWithSso(idp: Awaited<ReturnType<typeof startTestProvider>>, domain: string) {
  const c = await companyWithPeople(ctx);
  const admin = await signedIn(ctx, c.admin.email);
  await admin.get('/settings/sign-in');
  const saved = await admin.post('/settings/sign-in/sso', {
    issuer: idp.issuer,
    client_id: CLIENT_ID,
    client_secret: SECRET,
    domains: domain,
  });
  expect(saved.statusCode, saved.body).toBe(303);
  const operator = `operator-${tag()}@registry-${tag()}.example`;
  await ctx.deps.companies.createUser({ companyId: null, email: operator, password: PASSWORD, role: 'operator' });
  const op = await signedIn(ctx, operator);
  await op.get(`/operator/companies/${c.id}`);
  expect((await op.post(`/operator/companies/${c.id}/sso-domains/approve`, { domain })).statusCode).toBe(303);
  return c;
}

/** The email step, then the provider's pages: the address the provider sends the browser back to. */
async function throughProvider(web: WebClient, idp: Awaited<ReturnType<typeof startTestProvider>>, email: string) {
  await web.get('/login');
  const step = await web.post('/login', { email });
  expect(step.statusCode, step.body).toBe(200);
  const url = /http-equiv="refresh" content="0;url=([^"]+)"/u.exec(step.body)?.[1]?.replaceAll('&amp;', '&');
  expect(url?.startsWith(`${idp.issuer}/auth?`), step.body).toBe(true);
  const back = new URL(await idp.signIn(url!, email));
  return `${back.pathname}${back.search}`;
}

describe('single sign-on, through HTTP', () => {
  let idp: Awaited<ReturnType<typeof startTestProvider>>;
  const domain = `staff-${tag()}.example`;
  let company: { id: string };
  beforeAll(async () => {
    idp = await startTestProvider({ clientId: CLIENT_ID, clientSecret: SECRET, redirectUri: REDIRECT });
    company = await companyWithSso(idp, domain);
  }, 180_000);
  afterAll(async () => idp?.close());

  it('signs in (creating a new person as a member) under a new session id after the callback', async () => {
    const email = `new.person@${domain}`;
    const web = browser();
    const callback = await throughProvider(web, idp, email);
    const before = web.cookies.get('claims_session')!;
    const res = await web.get(callback);
    expect(res.statusCode, res.body).toBe(303);
    expect(res.headers.location).toBe('/');
    expect(web.cookies.get('claims_session')).not.toBe(before);
    expect((await web.get('/claims')).statusCode).toBe(200);
    expect(await peopleOf(email)).toEqual([{ role: 'member', company_id: company.id }]);
    // The session that went to the provider signs nobody in.
    const old = await ctx.app.inject({ method: 'GET', url: '/claims', headers: { host: HOST, cookie: `claims_session=${before}` } });
    expect(old.statusCode).toBe(303);
  });

  it('refuses an answer whose email the provider did not confirm (email_verified missing): nobody created, nobody linked', async () => {
    const stranger = `unverified.new@${domain}`;
    const web = browser();
    const res = await web.get(await throughProvider(web, idp, stranger));
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain('Your provider did not confirm your email address');
    expect(await peopleOf(stranger)).toEqual([]);
    expect((await web.get('/claims')).headers.location).toMatch(/^\/login/u);
    // An existing admin of the company, by an unverified answer: not signed in.
    const admin = `unverified.admin@${domain}`;
    await ctx.deps.companies.createUser({ companyId: company.id, email: admin, password: PASSWORD, role: 'admin' });
    const again = browser();
    const refused = await again.get(await throughProvider(again, idp, admin));
    expect(refused.statusCode).toBe(403);
    expect((await again.get('/settings/people')).headers.location).toMatch(/^\/login/u);
  });
});

describe('a sign-in after the provider stopped publishing its discovery document', () => {
  it('still works from the document kept at save time: the service fetched no discovery document', async () => {
    const idp = await startTestProvider({ clientId: CLIENT_ID, clientSecret: SECRET, redirectUri: REDIRECT });
    try {
      const domain = `kept-${tag()}.example`;
      await companyWithSso(idp, domain);
      const fetched = idp.discoveryRequests;
      expect(fetched).toBeGreaterThan(0);
      idp.hideDiscovery();
      const web = browser();
      const res = await web.get(await throughProvider(web, idp, `someone@${domain}`));
      expect(res.statusCode, res.body).toBe(303);
      expect((await web.get('/claims')).statusCode).toBe(200);
      expect(idp.discoveryRequests).toBe(fetched);
    } finally {
      await idp.close();
    }
  });
});
