import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';

import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { claimBody, companyPrincipal, createTestContext, type TestContext } from '../harness';
import { companyWithPeople, PASSWORD } from '../web/web-client';
import { signInAs } from './sign-in';
import { launchChromium, type Browser } from './chromium';

// Browser tests drive the pages end to end; they run once, in the pglite project (the security
// rules are covered on both databases by test/web), and only where /usr/bin/chromium is installed:
// vitest.config.ts leaves them out with a notice otherwise, and CI (CI=true) requires it.
let ctx: TestContext;
let browser: Browser;
let base: string;
let a: Awaited<ReturnType<typeof companyWithPeople>>;
let b: Awaited<ReturnType<typeof companyWithPeople>>;
beforeAll(async () => {
  ctx = await createTestContext();
  await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`;
  browser = await launchChromium();
  a = await companyWithPeople(ctx, 'Alpha');
  b = await companyWithPeople(ctx, 'Beta');
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await ctx?.close();
});

async function signIn(page: Page, email: string) {
  await page.goto(`${base}/`);
  await expect.poll(() => page.url()).toContain('/login');
  await signInAs(page, base, email, PASSWORD);
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
}

async function newPage(): Promise<Page> {
  const page = await browser.context.newPage();
  await browser.context.clearCookies();
  return page;
}

describe('dashboard in Chromium', { timeout: 60_000 }, () => {
  it('goes from sign-in to a working API token, then revokes it and the API answers 401', async () => {
    const page = await newPage();
    await signIn(page, a.admin.email);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'API Tokens' }).waitFor();
    await page.getByLabel('Token name').fill('Browser test system');
    await page.locator('#scope-claims-read').check();
    await page.getByRole('button', { name: 'Create Token' }).click();
    await page.getByText('It will not be shown again.').waitFor();
    const token = await page.getByLabel('Token value').inputValue();
    expect(token).toMatch(/^csk_[0-9A-Za-z]{36}$/u);
    await expect.poll(() => page.getByRole('button', { name: 'Copy' }).isVisible()).toBe(true);

    const call = (t: string) =>
      page.evaluate(async (value) => (await fetch('/api/v1/claims', { headers: { Authorization: `Bearer ${value}` } })).status, t);
    expect(await call(token)).toBe(200);

    await page.getByRole('link', { name: 'Done, back to API Tokens' }).click();
    expect(await page.content()).not.toContain(token);
    await page.getByRole('link', { name: 'Revoke token Browser test system' }).click();
    await page.getByRole('button', { name: 'Revoke token' }).click();
    await page.getByText('The token was revoked.').waitFor();
    expect(await call(token)).toBe(401);
    await page.close();
  });

  it('searches by plate and changes the status of an own claim', async () => {
    const plate = `BR${randomBytes(2).toString('hex').toUpperCase()}`;
    const own = await ctx.deps.claims.submit(companyPrincipal(a), claimBody({ vehicle_registration: plate }));
    await ctx.deps.claims.submit(companyPrincipal(b), claimBody({ vehicle_registration: plate }));
    const page = await newPage();
    await signIn(page, a.member.email);
    await page.getByRole('link', { name: 'Search' }).click();
    await page.getByLabel('Vehicle registration').fill(plate.toLowerCase().replace(/^(..)/u, '$1-'));
    await page.getByRole('button', { name: 'Search by plate' }).click();
    await page.getByRole('heading', { name: `2 claims for` }).waitFor();
    const rows = page.getByRole('region', { name: 'Search results' }).getByRole('row');
    expect(await rows.count()).toBe(3);
    await page.getByRole('link', { name: /^Open claim of/u }).click();
    await page.getByLabel('New status').selectOption('settled');
    await page.getByRole('button', { name: 'Change status' }).click();
    await page.getByText('The status was changed.').waitFor();
    expect((await ctx.deps.claims.get(companyPrincipal(a), own.id)).status).toBe('settled');
    await page.close();
  });

  it('imports a file with errors, showing progress and then each row error', async () => {
    const today = ctx.deps.today();
    const doc = () => `P${randomBytes(5).toString('hex').toUpperCase()}`;
    const csv = [
      'first_name,last_name,date_of_birth,id_type,id_number,claim_date,vehicle_registration',
      `Ona,Petraitė,1985-06-02,passport,${doc()},${today},AB123`,
      `Jonas,Jonaitis,1990-01-01,passport,${doc()},2999-01-01,CD456`,
      `Rūta,Rutaitė,1992-02-02,driving_licence,${doc()},${today},EF789`,
    ].join('\n');
    const page = await newPage();
    await signIn(page, a.member.email);
    await page.getByRole('link', { name: 'Import' }).click();
    // The page script takes over the form: upload with progress (XMLHttpRequest), then polling.
    await page.locator('form[data-import-form][data-enhanced="true"]').waitFor();
    await page.getByLabel('CSV file').setInputFiles({ name: 'claims-with-errors.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
    const upload = page.waitForResponse((r) => r.url() === `${base}/imports` && r.request().method() === 'POST');
    await page.getByRole('button', { name: 'Upload and import' }).click();
    expect((await upload).status()).toBe(202);
    await page.getByText('Import finished: 1 imported, 2 failed.').waitFor({ timeout: 30_000 });
    const errors = page.getByRole('region', { name: 'Row errors' });
    await errors.getByText('The claim date cannot be in the future.').waitFor();
    await errors.getByRole('cell', { name: 'id_type' }).waitFor();
    const download = page.waitForEvent('download');
    await page.getByRole('link', { name: 'Download failed rows (CSV)' }).click();
    expect((await download).suggestedFilename()).toMatch(/^import-[0-9a-f]{8}-failed-rows\.csv$/u);
    await page.getByRole('link', { name: 'Import claims' }).click();
    await page.getByRole('region', { name: 'Import history' }).getByRole('cell', { name: 'claims-with-errors.csv', exact: true }).waitFor();
    await page.close();
  });

  it('labels every form control and lets the keyboard reach them', async () => {
    type Control = { id: string; name: string; labels?: { length: number } | null; getAttribute(n: string): string | null };
    const page = await newPage();
    await signIn(page, a.admin.email);
    for (const url of ['/claims/new', '/claims', '/search', '/imports', '/settings/tokens', '/settings/people']) {
      await page.goto(`${base}${url}`);
      const unlabelled = await page
        .locator('input:not([type="hidden"]), select, textarea')
        .evaluateAll((els: unknown[]) =>
          (els as Control[]).filter((e) => !(e.labels && e.labels.length > 0) && !e.getAttribute('aria-label')).map((e) => e.id || e.name),
        );
      expect(unlabelled, url).toEqual([]);
    }
    // From the top of a page: the skip link first, then the controls in order, by Tab alone.
    await page.goto(`${base}/settings/tokens`);
    await page.keyboard.press('Tab');
    expect(
      await page.evaluate(
        () => (globalThis as unknown as { document: { activeElement: { textContent: string } } }).document.activeElement.textContent,
      ),
    ).toBe('Skip to main content');
    let reached = false;
    for (let i = 0; i < 60 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached = await page.getByRole('button', { name: 'Create Token' }).evaluate((el: unknown) => {
        const doc = (globalThis as unknown as { document: { activeElement: unknown } }).document;
        return doc.activeElement === el;
      });
    }
    expect(reached).toBe(true);
    await page.close();
  });

  it("keeps a person of company B away from A's tokens and A's claims", async () => {
    const aClaim = await ctx.deps.claims.submit(companyPrincipal(a), claimBody());
    const [aToken] = await ctx.deps.tokens.list(a.id);
    const page = await newPage();
    await signIn(page, b.admin.email);
    await page.goto(`${base}/settings/tokens`);
    expect(await page.content()).not.toContain('Browser test system');
    const tokenPage = await page.goto(`${base}/settings/tokens/${aToken!.id}/revoke`);
    expect(tokenPage!.status()).toBe(404);
    await page.getByRole('heading', { name: 'Not found' }).waitFor();
    const claimPage = await page.goto(`${base}/claims/${aClaim.id}`);
    expect(claimPage!.status()).toBe(404);
    // A forged status form, posted from B's own signed-in page with B's valid CSRF token.
    await page.goto(`${base}/claims`);
    const csrf = await page.locator('input[name="_csrf"]').first().inputValue();
    const status = await page.evaluate(
      async ({ id, token }) => {
        const res = await fetch(`/claims/${id}/status`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ _csrf: token, status: 'closed' }),
        });
        return res.status;
      },
      { id: aClaim.id, token: csrf },
    );
    expect(status).toBe(403);
    expect((await ctx.deps.claims.get(companyPrincipal(a), aClaim.id)).status).toBe('filed');
    await page.close();
  });
});
