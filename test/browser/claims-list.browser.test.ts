import fs from 'node:fs';
import type { AddressInfo } from 'node:net';

import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { claimBody, companyPrincipal, createTestContext, type TestContext } from '../harness';
import { companyWithPeople, PASSWORD } from '../web/web-client';
import { openMenu, signedInPage } from './sign-in';
import { launchChromium, type Browser } from './chromium';
import { CLEAN, pageReport, WIDTHS } from './page-checks';

// Project pglite only, where /usr/bin/chromium is installed: vitest.config.ts.

let ctx: TestContext;
let browser: Browser;
let base: string;
let a: Awaited<ReturnType<typeof companyWithPeople>>;
// 60 claims, one a day back from today; every third of "Ona Petraitė" with a settled status and a plate AAA…
beforeAll(async () => {
  ctx = await createTestContext({ APP_TIMEZONE: 'UTC' });
  await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`;
  browser = await launchChromium();
  a = await companyWithPeople(ctx, 'Alpha');
  const today = Date.parse(`${ctx.deps.today()}T00:00:00Z`);
  for (let i = 0; i < 60; i++) {
    const ona = i % 3 === 0;
    const body = claimBody({
      claim_date: new Date(today - i * 86_400_000).toISOString().slice(0, 10),
      vehicle_registration: `${ona ? 'AAA' : 'BBB'}${String(i).padStart(3, '0')}`,
      status: ona ? 'settled' : 'filed',
    });
    if (ona) Object.assign(body.client, { first_name: 'Ona', last_name: 'Petraitė' });
    await ctx.deps.claims.submit(companyPrincipal(a), body);
  }
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await ctx?.close();
});

const signedIn = (): Promise<Page> => signedInPage(browser, base, a.member.email, PASSWORD, { landing: 'Overview' });

const claimDates = (page: Page) => page.locator('tbody td[data-label="Claim date"]').allTextContents();

describe('the claims list in Chromium', { timeout: 60_000 }, () => {
  for (const size of WIDTHS) {
    it(`filters, sorts, pages and exports at ${size.width} px`, async () => {
      const page = await signedIn();
      await page.setViewportSize({ width: size.width, height: size.height });
      await openMenu(page);
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Claims', exact: true }).click();
      await page.getByText('60 claims').waitFor();
      // Newest claim date first.
      const dates = await claimDates(page);
      expect(dates).toHaveLength(25);
      expect([...dates].sort().reverse()).toEqual(dates);
      const report = await pageReport(page);
      if (size.name === 'desktop') report.smallTargets = [];
      expect(report).toEqual(CLEAN);

      // Pages: next, then straight to the last, then back to the first by number.
      await page.getByRole('link', { name: 'Next page' }).click();
      await page.getByText('Page 2 of 3').waitFor();
      await page.getByRole('link', { name: 'Last page, 3' }).click();
      await page.getByText('Page 3 of 3').waitFor();
      expect(await claimDates(page)).toHaveLength(10);
      await page.getByRole('link', { name: 'Page 1', exact: true }).click();
      await page.getByText('Page 1 of 3').waitFor();
      expect(await claimDates(page)).toEqual(dates);

      // Filters combine and stay in the address.
      await page.getByLabel('Plate').fill('aaa');
      await page.getByLabel('Client name').fill('ona petr');
      await page.getByLabel('Status').selectOption('settled');
      await page.getByRole('button', { name: 'Show claims' }).click();
      await page.getByText('20 claims match the filter').waitFor();
      const url = new URL(page.url());
      expect(Object.fromEntries(url.searchParams)).toMatchObject({ plate: 'aaa', name: 'ona petr', status: 'settled' });
      expect(await pageReport(page)).toMatchObject({ overflow: 0, actionsOutside: [], axe: [] });
      await page.getByLabel('Order').selectOption('registered');
      await page.getByRole('button', { name: 'Show claims' }).click();
      await page.locator('th', { hasText: 'Registered' }).waitFor({ state: 'attached' });
      expect(new URL(page.url()).searchParams.get('sort')).toBe('registered');

      // The export has the filter's 20 claims, in the import's columns.
      const download = page.waitForEvent('download');
      await page.getByRole('link', { name: /^Export these 20 as CSV/u }).click();
      const file = await (await download).path();
      const lines = fs
        .readFileSync(file, 'utf8')
        .replace(/^\uFEFF/u, '')
        .trim()
        .split('\n');
      expect(lines[0]).toBe(
        'first_name,last_name,date_of_birth,id_type,id_number,claim_date,vehicle_registration,claim_type,amount,currency,is_at_fault,status',
      );
      expect(lines).toHaveLength(21);
      expect(lines.slice(1).every((l) => l.startsWith('Ona,Petraitė,') && l.includes(',settled'))).toBe(true);
      await page.close();
    });
  }
});
