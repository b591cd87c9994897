import type { AddressInfo } from 'node:net';

import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { enqueueWebhookEvent } from '../../src/domain/webhooks/webhook-service';
import { claimBody, companyPrincipal, createTestContext, type TestContext } from '../harness';
import { csv, docNumber, futureDate, postImport, validRow } from '../import-helpers';
import { companyWithPeople, PASSWORD } from '../web/web-client';
import { signedInPage } from './sign-in';
import { launchChromium, type Browser } from './chromium';
import { CLEAN, headerHeight, pageReport, rowActions, WIDTHS } from './page-checks';

// Every page at a laptop's width and a phone's: no sideways scrolling, each list row's action
// inside the window, 44 px tap targets on the phone, and no axe-core violation. Run as the
// other browser tests are (pglite project, Debian's Chromium).
// Project pglite only, where /usr/bin/chromium is installed: vitest.config.ts.

let ctx: TestContext;
let browser: Browser;
let base: string;
let a: Awaited<ReturnType<typeof companyWithPeople>>;
let operatorEmail: string;
const urls: Record<string, string> = {};
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
  await ctx.deps.tokens.create(a.id, 'Claims system (production) with a long name', a.admin.id);
  await ctx.deps.webhooks.createEndpoint(a.id, 'https://hooks.alpha-mutual-insurance.example.net/registry/claims/imports');
  await ctx.deps.repos.transaction((tx) => enqueueWebhookEvent(tx, { companyId: a.id, type: 'import.completed', payload: {} }));
  const rows = [validRow(), validRow({ claim_date: futureDate() }), validRow({ id_type: 'driving_licence' }), validRow()];
  await postImport(ctx.app, a.auth, csv(rows), { fileName: 'claims-with-a-rather-long-file-name-2026-11.csv' });
  const [done] = (await ctx.deps.imports.list(companyPrincipal(a), { limit: 1 })).data;
  urls.import = `/imports/${done!.id}`;
}, 120_000);
afterAll(async () => {
  await browser?.close();
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

describe('every page at 1366 and 390 px', { timeout: 120_000 }, () => {
  for (const size of WIDTHS) {
    it(`company pages at ${size.width} px: no sideways scrolling, row actions in view, tap targets, axe`, async () => {
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
        if (size.name === 'desktop') report.smallTargets = [];
        reports[url] = report;
        if (LISTS_WITH_ACTIONS.has(key)) expect(await rowActions(page), url).toBeGreaterThan(0);
        if (size.name === 'phone') expect(await headerHeight(page), url).toBeLessThanOrEqual(120);
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
      if (size.name === 'desktop') login.smallTargets = [];
      expect(login, '/login').toEqual(CLEAN);
      await page.close();
      const op = await signedIn(operatorEmail);
      await op.setViewportSize({ width: size.width, height: size.height });
      for (const url of ['/operator', `/operator/companies/${a.id}`]) {
        await op.goto(`${base}${url}`);
        const report = await pageReport(op);
        if (size.name === 'desktop') report.smallTargets = [];
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
