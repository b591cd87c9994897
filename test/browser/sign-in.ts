import type { Page } from 'playwright-core';

import { Secret, TOTP } from 'otpauth';

import type { Browser } from './chromium';

/** Second-factor keys set up by the browser tests, by email. */
const keys = new Map<string, string>();
const code = (key: string, at: number) =>
  new TOTP({ secret: Secret.fromBase32(key), digits: 6, period: 30, algorithm: 'SHA1' }).generate({ timestamp: at });

/**
 * Signs in on the sign-in page as a person does: the email, Continue, the password, Sign in; a
 * second factor that is due is set up (the key read from the page) or answered with a code.
 * Resolves once the browser has left the sign-in pages.
 */
export async function signInAs(page: Page, base: string, email: string, password: string): Promise<void> {
  if (!new URL(page.url()).pathname.startsWith('/login')) await page.goto(`${base}/login`);
  await page.getByLabel('Email').fill(email);
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((u) => !u.pathname.startsWith('/login') || u.pathname === '/login/enrol' || u.pathname === '/login/code');
  const path = new URL(page.url()).pathname;
  if (path === '/login/enrol') {
    const key = (await page.locator('#totp-key').inputValue()).replaceAll(' ', '');
    keys.set(email, key);
    await page.getByLabel('Code from the app').fill(code(key, Date.now()));
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.getByRole('link', { name: 'I have saved them, go on' }).click();
  } else if (path === '/login/code') {
    const key = keys.get(email);
    if (!key) throw new Error(`no second-factor key known for ${email}`);
    // A code works once: a second sign-in within the same 30 seconds uses the next step's.
    for (const at of [Date.now(), Date.now() + 30_000]) {
      await page.getByLabel('Code').fill(code(key, at));
      await page.getByRole('button', { name: 'Verify' }).click();
      await page.waitForLoadState('load');
      if (!new URL(page.url()).pathname.startsWith('/login')) break;
    }
  }
  await page.waitForURL((u) => !u.pathname.startsWith('/login'));
}

/**
 * A new page of the browser, signed in as `email` (the cookies of an earlier sign-in cleared
 * first), at `size` when given; with `landing`, once the page's level-1 heading of that name shows.
 */
export async function signedInPage(
  browser: Browser,
  base: string,
  email: string,
  password: string,
  opts: { size?: { width: number; height: number }; landing?: string } = {},
): Promise<Page> {
  await browser.context.clearCookies();
  const page = await browser.context.newPage();
  if (opts.size) await page.setViewportSize(opts.size);
  await signInAs(page, base, email, password);
  if (opts.landing) await page.getByRole('heading', { level: 1, name: opts.landing }).waitFor();
  return page;
}

/** Opens the navigation's Menu where it is folded (a phone), as a person taps it; nothing elsewhere. */
export async function openMenu(page: Page): Promise<void> {
  const toggle = page.getByRole('button', { name: 'Menu' });
  if ((await toggle.isVisible()) && (await toggle.getAttribute('aria-expanded')) !== 'true') await toggle.click();
}
