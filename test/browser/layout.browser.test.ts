import fs from 'node:fs';
import type { AddressInfo } from 'node:net';

import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Need } from '../../src/domain/access/access';
import { CLI_ACTOR, NO_ORIGIN } from '../../src/domain/audit/audit';
import { enqueueWebhookEvent } from '../../src/domain/webhooks/webhook-service';
import { claimBody, companyPrincipal, createTestContext, type TestContext } from '../harness';
import { csv, docNumber, futureDate, postImport, validRow } from '../import-helpers';
import { startTestProvider } from '../support/oidc-provider';
import { companyWithPeople, PASSWORD, signedIn as signedInClient, totpCode } from '../web/web-client';
import { openMenu, signedInPage } from './sign-in';
import { launchChromium, type Browser } from './chromium';
import { CLEAN, headerHeight, pageReport, rowActions, WIDTHS } from './page-checks';

// Every dashboard page on a phone (390 × 844) as each role, and the company and operator pages at
// a laptop's width: no sideways scrolling, each list row's action inside the window, 44 px tap
// targets on the phone, and no axe-core violation. Run as the other browser tests are (pglite
// project, Debian's Chromium). Project pglite only, where /usr/bin/chromium is installed: vitest.config.ts.

let ctx: TestContext;
let browser: Browser;
let base: string;
let a: Awaited<ReturnType<typeof companyWithPeople>>;
let viewerEmail: string;
let operatorEmail: string;
let idp: Awaited<ReturnType<typeof startTestProvider>>;
const urls: Record<string, string> = {};
/** The ids the pages with an id in their address are opened with. */
const ids: Record<'claim' | 'import' | 'batch' | 'token' | 'webhook' | 'company' | 'person', string> = {
  claim: '',
  import: '',
  batch: '',
  token: '',
  webhook: '',
  company: '',
  person: '',
};
beforeAll(async () => {
  ctx = await createTestContext({ APP_TIMEZONE: 'UTC' });
  await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`;
  browser = await launchChromium();
  a = await companyWithPeople(ctx, 'Alpha Mutual Insurance of the Baltic Coast');
  const b = await companyWithPeople(ctx, 'Beta');
  operatorEmail = `operator-${Math.random().toString(36).slice(2, 8)}@registry.example`;
  await ctx.deps.companies.createUser({ companyId: null, email: operatorEmail, password: PASSWORD, role: 'operator' });
  // Long names and amounts: what makes a row too wide on a phone.
  const long = {
    first_name: 'Marija-Konstancija',
    last_name: 'Vasiliauskaitė-Žukauskienė',
    date_of_birth: '1985-06-02',
    id_documents: [{ type: 'passport' as const, number: docNumber() }],
  };
  let first = '';
  for (let i = 0; i < 30; i++) {
    const claim = await ctx.deps.claims.submit(
      companyPrincipal(a),
      claimBody({ client: i % 3 ? claimBody().client : long, amount: '1234567.89', vehicle_registration: `LONG${1000 + i}` }),
    );
    first ||= claim.id;
  }
  // The claim page's incident (the same person and plate at Beta, the same day: a duplicate claim)
  // and its network (two more persons on the plate at Beta, ten plates of the person at Alpha).
  await ctx.deps.claims.submit(companyPrincipal(b), claimBody({ client: long, vehicle_registration: 'LONG1000' }));
  for (let i = 0; i < 2; i++) await ctx.deps.claims.submit(companyPrincipal(b), claimBody({ vehicle_registration: 'LONG1000' }));
  urls.claim = `/claims/${first}`;
  ids.claim = first;
  ids.token = (await ctx.deps.tokens.create(a.id, 'Claims system (production) with a long name', a.admin.id)).id;
  ids.webhook = (
    await ctx.deps.webhooks.createEndpoint(a.id, 'https://hooks.alpha-mutual-insurance.example.net/registry/claims/imports')
  ).id;
  await ctx.deps.repos.transaction((tx) => enqueueWebhookEvent(tx, { companyId: a.id, type: 'import.completed', payload: {} }));
  const rows = [validRow(), validRow({ claim_date: futureDate() }), validRow({ id_type: 'driving_licence' }), validRow()];
  await postImport(ctx.app, a.auth, csv(rows), { fileName: 'claims-with-a-rather-long-file-name-2026-11.csv' });
  const [done] = (await ctx.deps.imports.list(companyPrincipal(a), { limit: 1 })).data;
  urls.import = `/imports/${done!.id}`;
  ids.import = done!.id;
  ids.company = a.id;
  ids.person = a.member.id;
  viewerEmail = `viewer-${Math.random().toString(36).slice(2, 8)}@baltic-coast-mutual-insurance-group.example`;
  await ctx.deps.companies.createUser({ companyId: a.id, email: viewerEmail, password: PASSWORD, role: 'viewer' });
  // A plate file checked (its result page), through the form as a member sends it.
  const member = await signedInClient(ctx, a.member.email);
  await member.get('/lookups/batch');
  const plates = `vehicle_registration\nLONG1000\nLONG1001\nNOSUCH1\n???\n`;
  const batch = await member.postMultipart(
    '/lookups/batch',
    { _csrf: member.lastCsrf, purpose: 'Renewals of the whole autumn portfolio, checked before the November run' },
    { name: 'portfolio-renewals-november-2026-with-a-long-name.csv', content: plates },
  );
  ids.batch = batch.headers.location!.split('/').at(-1)!;
  // The check runs in the server (no Redis): waited for as a person waits on its page.
  for (let i = 0; i < 600 && (await ctx.deps.lookupBatches.get(companyPrincipal(a), ids.batch)).status !== 'completed'; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // Single sign-on with two long domains, one approved (Settings › Sign-in, the operator's company page).
  idp = await startTestProvider({
    clientId: 'claims-registry',
    clientSecret: 'a-client-secret-0123456789',
    redirectUri: `${base}/login/sso/callback`,
  });
  const by = { actor: CLI_ACTOR, origin: NO_ORIGIN };
  const domains = ['claims-department.alpha-mutual-insurance-of-the-baltic-coast.example', 'staff.alpha-mutual.example'];
  await ctx.deps.signIn.saveSso(
    a.id,
    {
      issuer: idp.issuer,
      clientId: 'claims-registry',
      clientSecret: 'a-client-secret-0123456789',
      domains: domains.join(', '),
      ssoOnly: false,
    },
    by,
  );
  await ctx.deps.signIn.approveDomain(a.id, domains[1]!, by);
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await idp?.close();
  await ctx?.close();
});

const signedIn = (email: string): Promise<Page> => signedInPage(browser, base, email, PASSWORD);

const COMPANY_PAGES = [
  '/',
  '/claims',
  'claim',
  '/claims/new',
  '/search',
  '/search?plate=long1000',
  '/lookups',
  '/imports',
  'import',
  '/settings/tokens',
  '/settings/people',
  '/settings/webhooks',
];
const LISTS_WITH_ACTIONS = new Set([
  '/claims',
  '/search?plate=long1000',
  '/imports',
  '/settings/tokens',
  '/settings/people',
  '/settings/webhooks',
]);

describe('the company and operator pages at 1366 px', { timeout: 120_000 }, () => {
  for (const size of WIDTHS.filter((w) => w.name === 'desktop')) {
    it(`company pages at ${size.width} px: no sideways scrolling, row actions in view, axe`, async () => {
      const page = await signedIn(a.admin.email);
      await page.setViewportSize({ width: size.width, height: size.height });
      const reports: Record<string, unknown> = {};
      for (const key of COMPANY_PAGES) {
        const url = urls[key] ?? key;
        await page.goto(`${base}${url}`);
        // A plate search is a form post (the address only fills the form in): sent as a person would.
        if (key.startsWith('/search?plate=')) {
          await Promise.all([page.waitForURL(`${base}/search`), page.getByRole('button', { name: 'Search by plate' }).click()]);
          await page.waitForLoadState('load');
        }
        const report = await pageReport(page);
        report.smallTargets = [];
        reports[url] = report;
        if (LISTS_WITH_ACTIONS.has(key)) expect(await rowActions(page), url).toBeGreaterThan(0);
      }
      expect(reports).toEqual(Object.fromEntries(Object.keys(reports).map((url) => [url, CLEAN])));
      await page.close();
    });

    it(`sign-in and operator pages at ${size.width} px`, async () => {
      await browser.context.clearCookies();
      const page = await browser.context.newPage();
      await page.setViewportSize({ width: size.width, height: size.height });
      await page.goto(`${base}/login`);
      const login = await pageReport(page);
      login.smallTargets = [];
      expect(login, '/login').toEqual(CLEAN);
      await page.close();
      const op = await signedIn(operatorEmail);
      await op.setViewportSize({ width: size.width, height: size.height });
      for (const url of ['/operator', `/operator/companies/${a.id}`]) {
        await op.goto(`${base}${url}`);
        const report = await pageReport(op);
        report.smallTargets = [];
        expect(report, `${url} at ${size.width}px`).toEqual(CLEAN);
      }
      await op.close();
    });
  }

  it("draws a claim's network whole on a phone, beside its table, and shows the incident and the duplicate flag", async () => {
    const page = await signedIn(a.member.email);
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${base}${urls.claim}`);
    expect(await page.getByText('Possible duplicate claim:').count()).toBe(1);
    expect(await page.getByRole('region', { name: 'Claims of the same incident' }).count()).toBe(1);
    const drawn = await page.evaluate<{ clipped: string[]; edges: number; rows: number; width: number }>(`(() => {
      const svg = document.querySelector('.graph svg').getBoundingClientRect();
      const clipped = [...document.querySelectorAll('.graph text')].filter((t) => {
        const r = t.getBoundingClientRect();
        return r.left < svg.left - 0.5 || r.right > svg.right + 0.5 || r.right > window.innerWidth;
      }).map((t) => t.textContent);
      return {
        clipped,
        edges: document.querySelectorAll('.graph line.edge').length,
        rows: document.querySelectorAll('.network table tbody tr').length,
        width: svg.width,
      };
    })()`);
    expect(drawn.clipped).toEqual([]);
    expect(drawn.edges).toBeGreaterThanOrEqual(12);
    expect(drawn.rows).toBe(drawn.edges);
    expect(drawn.width).toBeGreaterThan(300);
    await page.close();
  });

  it('shows the overview chart whole on a phone: every axis label inside the picture', async () => {
    const page = await signedIn(a.member.email);
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${base}/`);
    const clipped = await page.evaluate<string[]>(`(() => {
      const svg = document.querySelector('.chart svg').getBoundingClientRect();
      return [...document.querySelectorAll('.chart text')].filter((t) => {
        const r = t.getBoundingClientRect();
        return r.left < svg.left - 0.5 || r.right > svg.right + 0.5;
      }).map((t) => t.textContent);
    })()`);
    expect(clipped).toEqual([]);
    await page.close();
  });

  it('fixes the visible defects: styled URL input, Copy hidden without the script, checkbox beside its label', async () => {
    const page = await signedIn(a.admin.email);
    await page.goto(`${base}/settings/webhooks`);
    const url = await page.getByLabel('Endpoint URL').boundingBox();
    expect(url!.height).toBeGreaterThanOrEqual(44);
    expect(url!.width).toBeGreaterThan(300);
    const event = page.locator('code.event').first();
    expect(await event.evaluate((el: unknown) => (el as { getClientRects(): { length: number } }).getClientRects().length)).toBe(1);
    await page.goto(`${base}/imports`);
    const box = await page.locator('#import-check-only').boundingBox();
    const label = await page.locator('label[for="import-check-only"]').boundingBox();
    expect(Math.abs(box!.y + box!.height / 2 - (label!.y + label!.height / 2))).toBeLessThan(4);
    expect(label!.x).toBeGreaterThan(box!.x);
    await page.close();

    // Without the page script the Copy button stays hidden: it could not copy anything.
    const noScript = await signedIn(a.admin.email);
    await noScript.route('**/assets/app.js*', (route) => route.abort());
    await noScript.goto(`${base}/settings/tokens`);
    await noScript.getByLabel('Token name').fill('No script');
    await noScript.locator('#scope-claims-read').check();
    await noScript.getByRole('button', { name: 'Create Token' }).click();
    await noScript.getByText('It will not be shown again.').waitFor();
    expect(await noScript.locator('button[data-copy]').isVisible()).toBe(false);
    await noScript.close();
  });
});

type Role = 'admin' | 'member' | 'viewer' | 'operator';
/**
 * Every GET route of the dashboard: the address the phone test opens for it, or why it is no page
 * to check here. Checked against the app's own route list (`app.accessTable`): a new page without
 * an entry here fails the test.
 */
const PAGES: Record<string, { url: () => string; status?: number } | { skip: string }> = {
  'GET /': { url: () => '/' },
  'GET /claims': { url: () => '/claims' },
  'GET /claims/new': { url: () => '/claims/new' },
  'GET /claims/:id': { url: () => `/claims/${ids.claim}` },
  'GET /claims/export.csv': { skip: 'a CSV download' },
  'GET /search': { url: () => '/search' },
  'GET /lookups': { url: () => '/lookups' },
  'GET /alerts': { url: () => '/alerts' },
  'GET /lookups/batch': { url: () => '/lookups/batch' },
  'GET /lookups/batch/:id': { url: () => `/lookups/batch/${ids.batch}` },
  'GET /lookups/batch/:id/results.csv': { skip: 'a CSV download' },
  'GET /quality': { url: () => '/quality' },
  'GET /imports': { url: () => '/imports' },
  // Without a file waiting for the answer it leads back to /imports; the question itself is
  // checked at both widths in workflows.browser.test.ts.
  'GET /imports/confirm': { url: () => '/imports/confirm' },
  'GET /imports/:id': { url: () => `/imports/${ids.import}` },
  'GET /imports/:id/status': { skip: 'JSON for the page script' },
  'GET /imports/:id/failed-rows.csv': { skip: 'a CSV download' },
  'GET /settings': { url: () => '/settings' },
  'GET /settings/tokens': { url: () => '/settings/tokens' },
  'GET /settings/tokens/:id/revoke': { url: () => `/settings/tokens/${ids.token}/revoke` },
  'GET /settings/people': { url: () => '/settings/people' },
  'GET /settings/people/:id/remove': { url: () => `/settings/people/${ids.person}/remove` },
  'GET /settings/webhooks': { url: () => '/settings/webhooks' },
  'GET /settings/webhooks/:id/delete': { url: () => `/settings/webhooks/${ids.webhook}/delete` },
  'GET /settings/audit': { url: () => '/settings/audit' },
  'GET /settings/audit/export.csv': { skip: 'a CSV download' },
  'GET /settings/security': { url: () => '/settings/security' },
  'GET /settings/sign-in': { url: () => '/settings/sign-in' },
  'GET /operator': { url: () => '/operator' },
  'GET /operator/companies/:id': { url: () => `/operator/companies/${ids.company}` },
  'GET /operator/companies/:id/sign-in': { url: () => `/operator/companies/${ids.company}/sign-in` },
  'GET /operator/companies/:id/people/:personId/remove': { url: () => `/operator/companies/${ids.company}/people/${ids.person}/remove` },
  'GET /operator/quality': { url: () => '/operator/quality' },
  'GET /operator/audit': { url: () => '/operator/audit' },
  'GET /*': { url: () => '/no-such-page', status: 404 },
  'GET /login': { skip: 'a sign-in page: sign-in-pages.browser.test.ts checks it at 390 px' },
  'GET /login/code': { skip: 'a sign-in page: sign-in-pages.browser.test.ts checks it at 390 px' },
  'GET /login/enrol': { skip: 'a sign-in page: sign-in-pages.browser.test.ts checks it at 390 px' },
  'GET /login/sso/callback': { skip: "the provider's way back, no page: sso.browser.test.ts" },
  'GET /reset/:token': { skip: 'a sign-in page: sign-in-pages.browser.test.ts checks it at 390 px' },
  'GET /favicon.ico': { skip: 'the icon' },
};
/** Routes of libraries beside the dashboard, none of them its pages: the assets, the API reference (Swagger UI) and the probes. */
const NOT_DASHBOARD = /^\/(assets\/|docs(\/|$)|healthz$|readyz$)/u;

/** The innermost elements, and the texts, reaching past the window's right edge: what makes a page too wide. */
const widest = (page: Page) =>
  page.evaluate<string[]>(`(() => {
    const edge = window.innerWidth + 0.5;
    const name = (el) => el.tagName.toLowerCase() + (typeof el.className === 'string' && el.className ? '.' + el.className.trim().split(/\\s+/).join('.') : '');
    const past = [...document.querySelectorAll('body *')].filter((el) => el.getBoundingClientRect().right > edge);
    const out = past.filter((el) => !past.some((other) => other !== el && el.contains(other))).map((el) => name(el) + ' ' + Math.round(el.getBoundingClientRect().right));
    const texts = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    while (texts.nextNode()) {
      const node = texts.currentNode;
      if (!node.textContent.trim() || node.parentElement.closest('.visually-hidden, thead')) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      const right = range.getBoundingClientRect().right;
      if (right > edge) out.push(name(node.parentElement) + ' text ' + Math.round(right) + ': ' + node.textContent.trim().slice(0, 40));
    }
    return out.slice(0, 8);
  })()`);

const RANK: Record<string, number> = { viewer: 0, member: 1, admin: 2 };
/** What access.ts lets each role open: a company role its role and those below it; the operator the operator's pages. */
function mayOpen(role: Role, need: Need): boolean {
  if (need === 'public' || need === 'signed-in') return true;
  if (typeof need !== 'string') return false;
  if (role === 'operator' || need === 'operator') return role === need;
  return RANK[role]! >= RANK[need]!;
}

describe('every dashboard page on a phone (390 × 844), as an admin, a member, a viewer and the operator', { timeout: 300_000 }, () => {
  const PHONE = { width: 390, height: 844 };
  const pageRoutes = () => ctx.app.accessTable.filter((e) => e.surface === 'dashboard' && e.method === 'GET' && !NOT_DASHBOARD.test(e.url));

  it('has an entry for every GET route of the dashboard, and none for a route that is gone', () => {
    const routes = pageRoutes().map((e) => `GET ${e.url}`);
    expect(
      routes.filter((r) => !(r in PAGES)),
      'routes without an entry in PAGES',
    ).toEqual([]);
    expect(
      Object.keys(PAGES).filter((r) => !routes.includes(r)),
      'entries of PAGES without a route',
    ).toEqual([]);
  });

  const emails = (): Record<Role, string> => ({
    admin: a.admin.email,
    member: a.member.email,
    viewer: viewerEmail,
    operator: operatorEmail,
  });
  for (const role of ['admin', 'member', 'viewer', 'operator'] as const) {
    it(`as ${role === 'operator' ? 'the operator' : `a company ${role}`}: every page it may open fits the width with no axe violation; the others are refused`, async () => {
      const page = await signedInPage(browser, base, emails()[role], PASSWORD, { size: PHONE });
      const reports: Record<string, unknown> = {};
      const refused: string[] = [];
      for (const { url: route, need } of pageRoutes()) {
        const entry = PAGES[`GET ${route}`];
        if (!entry || 'skip' in entry) continue;
        const url = entry.url();
        const res = await page.goto(`${base}${url}`);
        if (!mayOpen(role, need)) {
          // Refused: a 403 page, or the operator's start page for the company overview.
          const home = role === 'operator' && route === '/' && new URL(page.url()).pathname === '/operator';
          if (res?.status() !== 403 && !home) refused.push(`${url}: ${res?.status()} at ${page.url()}`);
          continue;
        }
        expect(res?.status(), `${url} as ${role}`).toBe(entry.status ?? 200);
        const scrollWidth = await page.evaluate<number>('document.documentElement.scrollWidth');
        reports[url] = { ...(await pageReport(page)), wider: scrollWidth > PHONE.width ? { scrollWidth, by: await widest(page) } : false };
        expect(await headerHeight(page), url).toBeLessThanOrEqual(120);
        if (role === 'admin' && LISTS_WITH_ACTIONS.has(url)) expect(await rowActions(page), url).toBeGreaterThan(0);
      }
      expect(refused, `pages a ${role} may not open, not refused`).toEqual([]);
      expect(Object.keys(reports).length).toBeGreaterThanOrEqual(role === 'operator' ? 8 : 14);
      expect(reports).toEqual(Object.fromEntries(Object.keys(reports).map((url) => [url, { ...CLEAN, wider: false }])));
      await page.close();
    });
  }

  it("the pages reached by a button: a claim's registry panel (opened from another site), a webhook's rotated secret", async () => {
    const page = await signedInPage(browser, base, a.admin.email, PASSWORD, { size: PHONE });
    const reports: Record<string, unknown> = {};
    await page.goto(`${base}/claims/${ids.claim}`, { referer: 'http://mail.example.net/' });
    const show = page.getByRole('button', { name: 'Show matches, incident and network' });
    await show.waitFor();
    reports.registryButton = await pageReport(page);
    await show.click();
    await page.getByRole('heading', { name: 'Matches in the registry' }).waitFor();
    reports.registryShown = await pageReport(page);
    await page.goto(`${base}/settings/webhooks`);
    await page
      .getByRole('button', { name: /^Rotate secret/u })
      .first()
      .click();
    await page.getByRole('heading', { level: 1, name: 'Signing secret rotated' }).waitFor();
    reports.rotated = await pageReport(page);
    expect(reports).toEqual({ registryButton: CLEAN, registryShown: CLEAN, rotated: CLEAN });
    await page.close();
  });

  it('names the signed-in person whole in the opened menu, where the header has no room for the name', async () => {
    const page = await signedInPage(browser, base, viewerEmail, PASSWORD, { size: PHONE });
    await page.goto(`${base}/claims`);
    expect(await page.locator('.account .who').isVisible()).toBe(false);
    await openMenu(page);
    const who = page.getByRole('navigation', { name: 'Main' }).locator('.menu-who');
    expect(await who.isVisible()).toBe(true);
    expect((await who.textContent())!.replace(/\s+/gu, ' ').trim()).toBe(`Signed in as ${viewerEmail} · ${a.name}`);
    const fit = await who.evaluate((el) => {
      const r = el.getBoundingClientRect();
      return { left: r.left, right: r.right, clipped: el.scrollWidth > el.clientWidth };
    });
    expect(fit.left).toBeGreaterThanOrEqual(0);
    expect(fit.right).toBeLessThanOrEqual(390);
    expect(fit.clipped).toBe(false);
    // At a laptop's width the header names them, and the menu's line is not shown.
    await page.setViewportSize({ width: 1366, height: 900 });
    expect(await page.locator('.account .who').innerText()).toContain(viewerEmail);
    expect(await who.isVisible()).toBe(false);
    await page.close();
  });

  it("draws the data-quality bars in the overview's colour", async () => {
    const page = await signedInPage(browser, base, a.member.email, PASSWORD, { size: PHONE });
    const fills = async () =>
      page.evaluate<string[]>(`[...document.querySelectorAll('.chart svg rect')].map((r) => getComputedStyle(r).fill)`);
    await page.goto(`${base}/`);
    const overview = [...new Set(await fills())];
    expect(overview).toEqual(['rgb(29, 95, 168)']);
    await page.goto(`${base}/quality`);
    const quality = await fills();
    expect(quality.length).toBeGreaterThanOrEqual(7);
    expect([...new Set(quality)]).toEqual(overview);
    await page.close();
  });

  it('offers the recovery codes to copy and to download as a text file; Copy hidden without the script', async () => {
    const person = (
      await ctx.deps.companies.createUser({
        companyId: a.id,
        email: `codes-${Date.now()}@alpha.example`,
        password: PASSWORD,
        role: 'member',
      })
    ).user;
    await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    const enrol = async (page: Page) => {
      await page.goto(`${base}/settings/security`);
      await page.getByRole('button', { name: 'Set up a second factor' }).click();
      const key = (await page.locator('#totp-key').inputValue()).replaceAll(' ', '');
      await page.getByLabel('Code from the app').fill(totpCode(key, Date.now()));
      await page.getByRole('button', { name: 'Turn on' }).click();
      await page.getByRole('heading', { level: 1, name: 'Recovery codes' }).waitFor();
      return page.locator('#recovery-codes li').allInnerTexts();
    };
    const page = await signedInPage(browser, base, person.email, PASSWORD, { size: PHONE });
    const codes = await enrol(page);
    expect(codes).toHaveLength(10);
    expect(await pageReport(page)).toEqual(CLEAN);
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(codes.join('\n'));
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'Download as a text file' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe('recovery-codes.txt');
    const file = fs.readFileSync(await download.path(), 'utf8');
    expect(file.split('\n').filter((line) => codes.includes(line))).toEqual(codes);
    await page.close();
    await browser.context.clearPermissions();

    // Without the page script the Copy button stays hidden (it could copy nothing); the download works as it is.
    const other = (
      await ctx.deps.companies.createUser({
        companyId: a.id,
        email: `codes-ns-${Date.now()}@alpha.example`,
        password: PASSWORD,
        role: 'member',
      })
    ).user;
    const noScript = await signedInPage(browser, base, other.email, PASSWORD, { size: PHONE });
    await noScript.route('**/assets/app.js*', (route) => route.abort());
    expect(await enrol(noScript)).toHaveLength(10);
    expect(await noScript.getByRole('button', { name: 'Copy' }).isVisible()).toBe(false);
    expect(await noScript.getByRole('link', { name: 'Download as a text file' }).isVisible()).toBe(true);
    await noScript.close();
  });
});

describe('the API reference (/docs) in the browser', { timeout: 60_000 }, () => {
  it("shows the registry's mark and title, and loads the document from /api/v1/openapi.json, not /docs/json", async () => {
    await browser.context.clearCookies();
    const page = await browser.context.newPage();
    const asked: string[] = [];
    page.on('request', (r) => asked.push(new URL(r.url()).pathname));
    await page.goto(`${base}/docs`);
    await page.locator('.swagger-ui .info .title').getByText('Claims Registry API').waitFor();
    expect(await page.title()).toBe('API reference · Claims Registry');
    expect(await page.locator('.swagger-ui .topbar select').inputValue()).toBe('/api/v1/openapi.json');
    expect(await page.locator('.swagger-ui .topbar select option').allInnerTexts()).toEqual(['Claims Registry API (/api/v1/openapi.json)']);
    expect(await page.locator('.swagger-ui .topbar a.link img').getAttribute('src')).toMatch(/^data:image\/svg\+xml;base64,/u);
    expect(asked).toContain('/api/v1/openapi.json');
    expect(asked).not.toContain('/docs/json');
    await page.close();
  });
});
