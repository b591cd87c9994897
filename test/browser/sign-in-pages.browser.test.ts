import type { AddressInfo } from 'node:net';

import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, type TestContext } from '../harness';
import { companyWithPeople, PASSWORD } from '../web/web-client';
import { launchChromium, type Browser } from './chromium';
import { CLEAN, pageReport, WIDTHS } from './page-checks';
import { signedInPage, signInAs } from './sign-in';

// The sign-in and second-factor pages, Settings › Security and Sign-in, the reset pages, and the
// navigation on a phone: no sideways scrolling, 44 px targets on the phone, no axe-core violation,
// every page reachable from the menu by keyboard. Project pglite only (browser).

let ctx: TestContext;
let browser: Browser;
let base: string;
let a: Awaited<ReturnType<typeof companyWithPeople>>;

beforeAll(async () => {
  ctx = await createTestContext();
  await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`;
  a = await companyWithPeople(ctx, 'Alpha Mutual Insurance of the Baltic Coast');
  browser = await launchChromium();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await ctx?.close();
});

async function report(page: Page, phone: boolean) {
  const r = await pageReport(page);
  if (!phone) r.smallTargets = [];
  return r;
}

describe('sign-in pages at 1366 and 390 px', { timeout: 120_000 }, () => {
  for (const size of WIDTHS) {
    it(`the email and password steps, the second factor's set-up, recovery codes and code pages at ${size.width} px`, async () => {
      const phone = size.name === 'phone';
      await browser.context.clearCookies();
      const email = `operator-${size.width}-${Math.random().toString(36).slice(2, 6)}@registry.example`;
      await ctx.deps.companies.createUser({ companyId: null, email, password: PASSWORD, role: 'operator' });
      const page = await browser.context.newPage();
      await page.setViewportSize({ width: size.width, height: size.height });
      const reports: Record<string, unknown> = {};
      await page.goto(`${base}/login`);
      reports.email = await report(page, phone);
      await page.getByLabel('Email').fill(email);
      await page.getByRole('button', { name: 'Continue' }).click();
      await page.getByLabel('Password').waitFor();
      reports.password = await report(page, phone);
      await page.getByLabel('Password').fill('not the password');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('alert').waitFor();
      reports.passwordError = await report(page, phone);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL((u) => u.pathname === '/login/enrol');
      reports.enrol = await report(page, phone);
      await page.getByLabel('Code from the app').fill('000000');
      await page.getByRole('button', { name: 'Turn on' }).click();
      await page.getByRole('alert').waitFor();
      reports.enrolError = await report(page, phone);
      await page.close();
      // The set-up done by the helper, then the recovery codes page and the code step.
      const done = await signedInPage(browser, base, email, PASSWORD, { size });
      await done.getByRole('button', { name: 'Sign out' }).click();
      await done.goto(`${base}/login`);
      await done.getByLabel('Email').fill(email);
      await done.getByRole('button', { name: 'Continue' }).click();
      await done.getByLabel('Password').fill(PASSWORD);
      await done.getByRole('button', { name: 'Sign in' }).click();
      await done.waitForURL((u) => u.pathname === '/login/code');
      reports.code = await report(done, phone);
      await done.close();
      expect(reports).toEqual(Object.fromEntries(Object.keys(reports).map((k) => [k, CLEAN])));
    });

    it(`Settings › Security and Sign-in, a reset link and its page at ${size.width} px`, async () => {
      const phone = size.name === 'phone';
      const page = await signedInPage(browser, base, a.admin.email, PASSWORD, { size });
      const reports: Record<string, unknown> = {};
      for (const url of ['/settings/security', '/settings/sign-in']) {
        await page.goto(`${base}${url}`);
        reports[url] = await report(page, phone);
      }
      await page.goto(`${base}/settings/security`);
      await page.getByRole('button', { name: 'Set up a second factor' }).click();
      await page.getByLabel('Code from the app').waitFor();
      reports.enrolFromSettings = await report(page, phone);
      await page.goto(`${base}/settings/sign-in`);
      await page.getByRole('button', { name: 'Save single sign-on' }).click();
      await page.getByText('The client id is required').first().waitFor();
      reports.ssoErrors = await report(page, phone);
      await page.goto(`${base}/settings/people`);
      await page.getByRole('button', { name: `Reset password of ${a.member.email}` }).click();
      await page.locator('#reset-link').waitFor();
      reports.resetLink = await report(page, phone);
      const link = await page.locator('#reset-link').inputValue();
      await browser.context.clearCookies();
      await page.goto(link);
      reports.resetForm = await report(page, phone);
      await page.close();
      expect(reports).toEqual(Object.fromEntries(Object.keys(reports).map((k) => [k, CLEAN])));
    });
  }
});

describe('the navigation on a phone (390 px)', { timeout: 120_000 }, () => {
  it('folds behind a Menu button: every page reachable by keyboard, none off screen, no sideways scrolling', async () => {
    await browser.context.clearCookies();
    const page = await browser.context.newPage();
    await page.setViewportSize({ width: 390, height: 844 });
    const member = (
      await ctx.deps.companies.createUser({ companyId: a.id, email: `nav-${Date.now()}@alpha.example`, password: PASSWORD, role: 'member' })
    ).user;
    await signInAs(page, base, member.email, PASSWORD);
    await page.goto(`${base}/settings/security`);
    const toggle = page.getByRole('button', { name: 'Menu' });
    expect(await toggle.getAttribute('aria-expanded')).toBe('false');
    expect(await page.getByRole('navigation', { name: 'Main' }).isVisible()).toBe(false);
    const pages: [string, string][] = [
      ['Overview', '/'],
      ['Claims', '/claims'],
      ['Enter a claim', '/claims/new'],
      ['Search', '/search'],
      ['Look-ups', '/lookups'],
      ['Alerts', '/alerts'],
      ['Plate file', '/lookups/batch'],
      ['Quality', '/quality'],
      ['Import', '/imports'],
      // A member's Settings opens People (API tokens are for admins).
      ['Settings', '/settings/people'],
    ];
    for (const [name, path] of pages) {
      // By keyboard: focus the button, Enter opens, Tab to the link, Enter follows it.
      await toggle.focus();
      await page.keyboard.press('Enter');
      expect(await toggle.getAttribute('aria-expanded')).toBe('true');
      const link = page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: name !== 'Alerts' });
      const box = await link.boundingBox();
      expect(box, name).not.toBeNull();
      expect(box!.x, name).toBeGreaterThanOrEqual(0);
      expect(box!.x + box!.width, name).toBeLessThanOrEqual(390);
      expect(box!.height, name).toBeGreaterThanOrEqual(43.5);
      let guard = 0;
      while (
        !(await link.evaluate((el) => el === (el.ownerDocument as unknown as { activeElement: unknown }).activeElement)) &&
        guard++ < 20
      ) {
        await page.keyboard.press('Tab');
      }
      await page.keyboard.press('Enter');
      await page.waitForURL((u) => u.pathname === path);
      await page.waitForLoadState('load');
      expect(await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth'), name).toBe(0);
      expect(await page.locator('.main-nav [aria-current="page"]').textContent(), name).toContain(name);
    }
    // Escape closes it and gives the focus back to the button.
    await toggle.click();
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Claims', exact: true }).focus();
    await page.keyboard.press('Escape');
    expect(await toggle.getAttribute('aria-expanded')).toBe('false');
    expect(await toggle.evaluate((el) => el === (el.ownerDocument as unknown as { activeElement: unknown }).activeElement)).toBe(true);
    // The settings pages (Security among them) are one step further, in the settings menu.
    await page.goto(`${base}/settings/people`);
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Security' }).click();
    await page.waitForURL((u) => u.pathname === '/settings/security');
    // Without the page script, the whole list is shown, wrapped, and still no sideways scrolling.
    await page.route('**/assets/app.js*', (route) => route.abort());
    await page.goto(`${base}/claims`);
    expect(await page.getByRole('navigation', { name: 'Main' }).isVisible()).toBe(true);
    expect(await page.getByRole('button', { name: 'Menu' }).isVisible()).toBe(false);
    expect(await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth')).toBe(0);
    await page.close();
  });
});
