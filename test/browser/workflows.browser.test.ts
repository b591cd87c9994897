import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';

import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { claimBody, companyPrincipal, createTestContext, type TestContext } from '../harness';
import { csv, validRow } from '../import-helpers';
import { companyWithPeople, PASSWORD } from '../web/web-client';
import { startReceiver } from '../webhooks/receiver';
import { openMenu, signedInPage } from './sign-in';
import { launchChromium, type Browser } from './chromium';
import { CLEAN, pageReport, WIDTHS } from './page-checks';

// The person search and its purpose reaching the look-up log, the duplicate-file confirmation and
// the webhook test event, driven in Chromium at both widths, each page checked as in layout.browser.
// Project pglite only, where /usr/bin/chromium is installed: vitest.config.ts.

let ctx: TestContext;
let browser: Browser;
let base: string;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  ctx = await createTestContext({ APP_TIMEZONE: 'UTC', WEBHOOK_ALLOW_PRIVATE: 'true' });
  await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`;
  browser = await launchChromium();
  receiver = await startReceiver(() => 200);
}, 60_000);
afterAll(async () => {
  await receiver?.close();
  await browser?.close();
  await ctx?.close();
});

const signedIn = (email: string, size: { width: number; height: number }): Promise<Page> =>
  signedInPage(browser, base, email, PASSWORD, { size, landing: 'Overview' });

async function expectClean(page: Page, phone: boolean) {
  const report = await pageReport(page);
  if (!phone) report.smallTargets = [];
  expect(report, page.url()).toEqual(CLEAN);
}

describe('workflows in Chromium', { timeout: 90_000 }, () => {
  for (const size of WIDTHS) {
    const phone = size.name === 'phone';

    it(`person search with a purpose reaches the look-up log at ${size.width} px`, async () => {
      const own = await companyWithPeople(ctx, 'Own');
      const other = await companyWithPeople(ctx, 'Other');
      const number = `P${randomBytes(5).toString('hex').toUpperCase()}`;
      const body = claimBody();
      Object.assign(body.client, { date_of_birth: '1979-04-12', id_documents: [{ type: 'national_id', number }] });
      await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: other.auth, payload: body });
      const page = await signedIn(own.member.email, size);
      await openMenu(page);
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Search' }).click();
      const person = page.locator('section[aria-labelledby="person-h"]');
      await person.getByLabel('Date of birth').fill('1979-04-12');
      await person.getByLabel('Document type').selectOption('national_id');
      await person.getByLabel('Document number').fill(number.toLowerCase());
      await person.getByLabel('Purpose').fill(`Case ${size.width}`);
      await person.getByRole('button', { name: 'Search by person' }).click();
      await page.getByRole('heading', { name: '1 claim for the person born 1979-04-12' }).waitFor();
      expect(await page.content()).not.toContain(number);
      await expectClean(page, phone);
      await openMenu(page);
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Look-ups' }).click();
      const row = page.getByRole('region', { name: 'Look-ups' }).getByRole('row').nth(1);
      await row.getByText(`Case ${size.width}`).waitFor();
      await row.getByText(own.member.email).waitFor();
      await row.getByText('Person search').waitFor();
      await row.getByText('Other companies’ (1)').waitFor();
      await page.getByLabel('Kind').selectOption('person_search');
      await page.getByRole('button', { name: 'Show look-ups' }).click();
      await page.getByText(`Case ${size.width}`).waitFor();
      expect(new URL(page.url()).searchParams.get('kind')).toBe('person_search');
      await expectClean(page, phone);
      await page.close();
    });

    it(`asks before importing the same file again at ${size.width} px`, async () => {
      const c = await companyWithPeople(ctx, 'Importer');
      const file = { name: 'same.csv', mimeType: 'text/csv', buffer: Buffer.from(csv([validRow(), validRow()])) };
      const page = await signedIn(c.member.email, size);
      await page.goto(`${base}/imports`);
      await page.locator('form[data-enhanced="true"]').waitFor();
      await page.getByLabel('CSV file').setInputFiles(file);
      await page.getByRole('button', { name: 'Upload and import' }).click();
      await page.getByText('Import finished: 2 imported, 0 failed.').waitFor({ timeout: 30_000 });
      await expectClean(page, phone);
      await page.goto(`${base}/imports`);
      await page.locator('form[data-enhanced="true"]').waitFor();
      await page.getByLabel('CSV file').setInputFiles(file);
      await page.getByRole('button', { name: 'Upload and import' }).click();
      await page.getByRole('heading', { level: 1, name: 'Import this file again?' }).waitFor();
      await page.getByRole('link', { name: 'same.csv' }).waitFor();
      await expectClean(page, phone);
      await page.getByRole('button', { name: 'Do not import it' }).click();
      await page.getByText('The file was not imported again.').waitFor();
      expect((await ctx.deps.imports.list(companyPrincipal(c), { limit: 10 })).data).toHaveLength(1);
      await page.close();
    });

    it(`sends a test event to a webhook and shows the answer at ${size.width} px`, async () => {
      const c = await companyWithPeople(ctx, 'Hooked');
      const page = await signedIn(c.admin.email, size);
      await page.goto(`${base}/settings/webhooks`);
      await page.getByLabel('Endpoint URL').fill(receiver.url);
      await page.getByRole('button', { name: 'Create Webhook' }).click();
      await page.goto(`${base}/settings/webhooks`);
      const before = receiver.received.length;
      await page.getByRole('button', { name: /^Send a test event/u }).click();
      await page.getByText('The test event was delivered.').waitFor();
      await page.getByText('your endpoint answered HTTP 200').waitFor();
      expect(receiver.received).toHaveLength(before + 1);
      expect(JSON.parse(receiver.received.at(-1)!.body).type).toBe('ping');
      await expectClean(page, phone);
      await page.close();
    });
  }
});
