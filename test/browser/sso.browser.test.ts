import type { AddressInfo } from 'node:net';

import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { CLI_ACTOR, NO_ORIGIN } from '../../src/domain/audit/audit';
import { createTestContext, type TestContext } from '../harness';
import { startTestProvider } from '../support/oidc-provider';
import { PASSWORD } from '../web/web-client';
import { launchChromium, type Browser } from './chromium';

// Single sign-on by OpenID Connect against a real provider: oidc-provider on 127.0.0.2 as the
// company's identity provider, the whole flow driven in Chromium. Project pglite only (browser).

let ctx: TestContext;
let browser: Browser;
let base: string;
let idp: Awaited<ReturnType<typeof startTestProvider>>;
let company: { id: string };
const CLIENT_ID = 'claims-registry';
const CLIENT_SECRET = 'a-client-secret-from-the-provider-0123456789';
const DOMAIN = 'staff-a.example';
/** The settings saved and the domains approved as the command line would (the pages are tested in test/web). */
const BY = { actor: CLI_ACTOR, origin: NO_ORIGIN };

beforeAll(async () => {
  ctx = await createTestContext();
  await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`;
  idp = await startTestProvider({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUri: `${base}/login/sso/callback` });
  company = await ctx.newCompany('SSO Alpha');
  await ctx.deps.signIn.saveSso(
    company.id,
    { issuer: idp.issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, domains: DOMAIN, ssoOnly: false },
    BY,
  );
  await ctx.deps.signIn.approveDomain(company.id, DOMAIN, BY);
  browser = await launchChromium();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await idp?.close();
  await ctx?.close();
});

async function freshPage(): Promise<Page> {
  await browser.context.clearCookies();
  const page = await browser.context.newPage();
  page.setDefaultTimeout(8_000);
  return page;
}

/** Types the email on the sign-in page and follows Continue to the provider's sign-in page. */
async function toProvider(page: Page, email: string) {
  await page.goto(`${base}/login`);
  await page.getByLabel('Email').fill(email);
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.waitForURL((u) => u.origin === idp.issuer);
}

/** Signs in at the provider (its development pages: any password) and consents. */
async function atProvider(page: Page) {
  await page.locator('input[name="password"]').fill('anything');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  const consent = page.getByRole('button', { name: 'Continue' });
  await consent.waitFor();
  await consent.click();
}

/**
 * Intercepts the service's answer to the email step (the page that sends the browser to the
 * provider) and lets `change` rewrite the provider address in it, or hold the browser here (null).
 * Resolves with the address the service gave.
 */
async function onSsoStart(page: Page, change: (url: URL) => URL | null): Promise<() => Promise<URL>> {
  let resolve!: (u: URL) => void;
  const given = new Promise<URL>((r) => (resolve = r));
  await page.route(`${base}/login`, async (route) => {
    if (route.request().method() !== 'POST') return route.continue();
    const response = await route.fetch();
    const body = await response.text();
    const href = /http-equiv="refresh" content="0;url=([^"]+)"/u.exec(body)?.[1]?.replaceAll('&amp;', '&');
    if (!href) return route.fulfill({ response, body });
    const url = new URL(href);
    resolve(url);
    const changed = change(new URL(href));
    const escaped = (u: string) => u.replaceAll('&', '&amp;');
    await route.fulfill({
      response,
      body: changed ? body.replaceAll(escaped(href), escaped(changed.href)) : '<!doctype html><title>held</title><p>held by the test</p>',
    });
  });
  return async () => {
    const url = await given;
    await page.unroute(`${base}/login`);
    return url;
  };
}

const peopleOf = (email: string) =>
  ctx.deps.db.query<{ role: string; company_id: string }>('SELECT role, company_id FROM users WHERE lower(email) = lower($1)', [email]);

describe('single sign-on by OpenID Connect', () => {
  it('sends an email of a covered domain to the provider, and creates an unknown person as a member at the first sign-in', async () => {
    const email = `new.person@${DOMAIN}`;
    const page = await freshPage();
    await toProvider(page, email);
    // The email went as a hint.
    expect(await page.locator('input[name="login"]').inputValue()).toBe(email);
    expect(await peopleOf(email)).toHaveLength(0);
    await atProvider(page);
    await page.waitForURL((u) => u.origin === base && !u.pathname.startsWith('/login'));
    expect(new URL(page.url()).pathname).toBe('/');
    expect(await page.locator('.account .who').textContent()).toContain(email);
    expect(await peopleOf(email)).toEqual([{ role: 'member', company_id: company.id }]);
    // Recorded: the person created by the service, then their sign-in.
    const events = await ctx.deps.db.query<{ action: string; actor_type: string }>(
      `SELECT action, actor_type FROM audit_events WHERE company_id = $1 AND target_name = $2 ORDER BY created_at`,
      [company.id, email],
    );
    expect(events).toEqual([
      { action: 'person.created', actor_type: 'system' },
      { action: 'person.signed_in', actor_type: 'person' },
    ]);
    // The next sign-in is the same person (no second one).
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL((u) => u.pathname === '/login');
    await page.getByLabel('Email').fill(email);
    await page.getByRole('button', { name: 'Continue' }).click();
    // The provider remembers its own session and consent: straight back.
    await page.waitForURL((u) => u.origin === base && u.pathname === '/');
    expect(await peopleOf(email)).toHaveLength(1);
    await page.close();
  });

  it('refuses an answer whose state is not the one this browser sent', async () => {
    const page = await freshPage();
    // The provider is asked with another state than the one this browser's session holds.
    const given = await onSsoStart(page, (url) => {
      url.searchParams.set('state', `${url.searchParams.get('state')}x`);
      return url;
    });
    await toProvider(page, `state.check@${DOMAIN}`);
    expect((await given()).searchParams.get('code_challenge_method')).toBe('S256');
    const answer = page.waitForResponse((r) => r.url().startsWith(`${base}/login/sso/callback`));
    await atProvider(page);
    expect((await answer).status()).toBe(401);
    await page.waitForLoadState('load');
    expect(await page.getByRole('alert').textContent()).toContain('Single sign-on did not succeed');
    expect(await peopleOf(`state.check@${DOMAIN}`)).toHaveLength(0);
    await page.goto(`${base}/claims`);
    expect(new URL(page.url()).pathname).toBe('/login');
    await page.close();
  });

  it('refuses a code used once already, even with the state of a new sign-in', async () => {
    const email = `replay@${DOMAIN}`;
    const page = await freshPage();
    let used: URL | undefined;
    page.on('request', (r) => {
      if (r.url().startsWith(`${base}/login/sso/callback`)) used = new URL(r.url());
    });
    await toProvider(page, email);
    await atProvider(page);
    await page.waitForURL((u) => u.origin === base && u.pathname === '/');
    expect(used?.searchParams.get('code')).toBeTruthy();
    await page.getByRole('button', { name: 'Sign out' }).click();
    // The same answer again: this browser's sign-in is over.
    const again = await page.goto(used!.href);
    expect(again!.status()).toBe(400);
    // A new sign-in is started (the browser held before the provider), and the old code is sent with its state.
    const given = await onSsoStart(page, () => null);
    await page.goto(`${base}/login`);
    await page.getByLabel('Email').fill(email);
    await page.getByRole('button', { name: 'Continue' }).click();
    const fresh = await given();
    const replay = new URL(used!.href);
    replay.searchParams.set('state', fresh.searchParams.get('state')!);
    const res = await page.goto(replay.href);
    expect(res!.status()).toBe(401);
    expect(await page.getByRole('alert').textContent()).toContain('Single sign-on did not succeed');
    await page.goto(`${base}/claims`);
    expect(new URL(page.url()).pathname).toBe('/login');
    await page.close();
  });

  it('refuses an ID token issued for another audience', async () => {
    const email = `audience@${DOMAIN}`;
    const page = await freshPage();
    idp.nextIdTokenAudience('another-application');
    await toProvider(page, email);
    await atProvider(page);
    await page.waitForURL((u) => u.origin === base && u.pathname.startsWith('/login/sso/callback'));
    expect(await page.getByRole('alert').textContent()).toContain('Single sign-on did not succeed');
    expect(await peopleOf(email)).toHaveLength(0);
    await page.goto(`${base}/claims`);
    expect(new URL(page.url()).pathname).toBe('/login');
    await page.close();
  });

  it('with "SSO only", refuses the password of the company\'s people', async () => {
    const other = await ctx.newCompany('SSO Only');
    const domain = 'staff-only.example';
    const email = `has.password@${domain}`;
    await ctx.deps.companies.createUser({ companyId: other.id, email, password: PASSWORD, role: 'admin' });
    // Before SSO only, the password works (a form that sends it, as a password manager's would).
    const signInWithPassword = async (page: Page) => {
      await page.goto(`${base}/login`);
      // Outside the page's Content-Security-Policy, as a browser extension would.
      await page.evaluate(`(() => {
        const form = document.querySelector('form[action="/login"]');
        form.querySelector('input[name="email"]').value = ${JSON.stringify(email)};
        const password = document.createElement('input');
        password.type = 'hidden';
        password.name = 'password';
        password.value = ${JSON.stringify(PASSWORD)};
        form.append(password);
        form.submit();
      })()`);
      const answer = await page.waitForResponse((r) => r.url() === `${base}/login` && r.request().method() === 'POST');
      const location = answer.status() === 303 ? (await answer.allHeaders()).location : undefined;
      if (location) await page.waitForURL(new URL(location, base).href);
      else await page.waitForLoadState('load');
    };
    await ctx.deps.signIn.saveSso(
      other.id,
      { issuer: idp.issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, domains: domain, ssoOnly: false },
      BY,
    );
    await ctx.deps.signIn.approveDomain(other.id, domain, BY);
    let page = await freshPage();
    await signInWithPassword(page);
    expect(new URL(page.url()).pathname).toBe('/');
    await page.close();
    await ctx.deps.signIn.saveSso(
      other.id,
      { issuer: idp.issuer, clientId: CLIENT_ID, clientSecret: '', domains: domain, ssoOnly: true },
      BY,
    );
    page = await freshPage();
    await signInWithPassword(page);
    expect(new URL(page.url()).pathname).toBe('/login');
    expect(await page.getByRole('alert').textContent()).toContain('Your company signs in only through its own sign-in page');
    await page.goto(`${base}/claims`);
    expect(new URL(page.url()).pathname).toBe('/login');
    // Its way in is the provider.
    await toProvider(page, email);
    await atProvider(page);
    await page.waitForURL((u) => u.origin === base && u.pathname === '/');
    await page.close();
  });
});
