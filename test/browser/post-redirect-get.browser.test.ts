import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';

import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { AuditAction } from '../../src/domain/audit/audit';
import { claimBody, companyPrincipal, createTestContext, plate, type TestContext } from '../harness';
import { csv, validRow } from '../import-helpers';
import { companyWithPeople, PASSWORD } from '../web/web-client';
import { signedInPage } from './sign-in';
import { launchChromium, type Browser } from './chromium';
import { CLEAN, pageReport } from './page-checks';

// Each dashboard form that creates something, submitted in Chromium on a phone (390 × 844), then
// the page reloaded as a person presses F5: one new item, not two (post/redirect/get), and a
// one-time value not shown again. Each page a form leads to fits the phone with no axe violation. Project pglite only, where /usr/bin/chromium is installed: vitest.config.ts.

let ctx: TestContext;
let browser: Browser;
let base: string;
let c: Awaited<ReturnType<typeof companyWithPeople>>;

beforeAll(async () => {
  ctx = await createTestContext({ APP_TIMEZONE: 'UTC' });
  await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`;
  browser = await launchChromium();
  c = await companyWithPeople(ctx, 'Reloads');
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await ctx?.close();
});

const events = async (companyId: string, action: AuditAction) => ctx.deps.repos.audit.list({ companyId, action, limit: 100 });

/** A signed-in page at a phone's size (390 × 844). */
async function onPhone(email: string): Promise<Page> {
  const page = await signedInPage(browser, base, email, PASSWORD);
  await page.setViewportSize({ width: 390, height: 844 });
  return page;
}

/** The page as it is now fits the phone: no sideways scrolling, actions in view, tap targets, no axe violation. */
async function expectFits(page: Page): Promise<void> {
  expect(await pageReport(page), new URL(page.url()).pathname).toEqual(CLEAN);
}

/** Reloads the page as F5 does and waits for it; the address it shows after. */
async function reload(page: Page): Promise<string> {
  await page.reload({ waitUntil: 'load' });
  return new URL(page.url()).pathname;
}

describe('a reload after a create form creates nothing more', { timeout: 90_000 }, () => {
  it('Create Token: one token, its value shown only before the reload', async () => {
    const page = await onPhone(c.admin.email);
    await page.goto(`${base}/settings/tokens`);
    await page.getByLabel('Token name').fill('Reloaded token');
    await page.locator('#scope-search').check();
    await page.getByRole('button', { name: 'Create Token' }).click();
    await page.getByRole('heading', { level: 1, name: 'Token created' }).waitFor();
    await expectFits(page);
    const token = await page.locator('#token-value').inputValue();
    expect(token).toMatch(/^csk_/u);
    await reload(page);
    await page.getByRole('heading', { level: 1, name: 'API Tokens' }).waitFor();
    expect(await page.content()).not.toContain(token);
    await page.getByText(`csk_…${token.slice(-4)}`).waitFor();
    expect((await ctx.deps.tokens.list(c.id)).filter((t) => t.name === 'Reloaded token')).toHaveLength(1);
    expect((await events(c.id, 'token.created')).filter((e) => e.target?.name === 'Reloaded token')).toHaveLength(1);
    await page.close();
  });

  it('Create Webhook: one endpoint, its secret shown only before the reload', async () => {
    const page = await onPhone(c.admin.email);
    await page.goto(`${base}/settings/webhooks`);
    await page.getByLabel('Endpoint URL').fill('https://reload-hooks.example.net/registry');
    await page.getByRole('button', { name: 'Create Webhook' }).click();
    await page.getByRole('heading', { level: 1, name: 'Webhook created' }).waitFor();
    await expectFits(page);
    const secret = await page.locator('#webhook-secret').inputValue();
    await reload(page);
    await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();
    expect(await page.content()).not.toContain(secret);
    expect((await ctx.deps.webhooks.listEndpoints(c.id)).filter((e) => e.url === 'https://reload-hooks.example.net/registry')).toHaveLength(
      1,
    );
    await page.close();
  });

  it('Add person with a generated password, and Reset password: one person, one link', async () => {
    const page = await onPhone(c.admin.email);
    await page.goto(`${base}/settings/people`);
    const email = `reload-${randomBytes(3).toString('hex')}@reloads.example`;
    await page.getByLabel('Email').fill(email);
    await page.getByRole('button', { name: 'Add person' }).click();
    await page.getByRole('heading', { level: 1, name: 'Person added' }).waitFor();
    await expectFits(page);
    const password = await page.locator('#first-password').inputValue();
    await reload(page);
    await page.getByRole('heading', { level: 1, name: 'People' }).waitFor();
    expect(await page.content()).not.toContain(password);
    expect((await ctx.deps.companies.listUsers(c.id)).filter((p) => p.email === email)).toHaveLength(1);

    await page.getByRole('button', { name: `Reset password of ${email}` }).click();
    const link = await page.locator('#reset-link').inputValue();
    await expectFits(page);
    await reload(page);
    await page.getByRole('heading', { level: 1, name: 'People' }).waitFor();
    expect(await page.content()).not.toContain(link);
    expect((await events(c.id, 'person.password_changed')).filter((e) => e.target?.name === email)).toHaveLength(1);
    await page.close();
  });

  it('Enter a claim: one claim', async () => {
    const member = await ctx.deps.companies.createUser({
      companyId: c.id,
      email: `claims-${randomBytes(3).toString('hex')}@reloads.example`,
      password: PASSWORD,
      role: 'member',
    });
    const page = await onPhone(member.user.email);
    await page.goto(`${base}/claims/new`);
    const body = claimBody();
    await page.locator('#f-client-first_name').fill('Ona');
    await page.locator('#f-client-last_name').fill('Petraitė');
    await page.locator('#f-client-date_of_birth').fill('1985-06-02');
    await page.locator('#f-client-id_documents-0-number').fill(body.client.id_documents[0]!.number);
    await page.locator('#f-vehicle_registration').fill(body.vehicle_registration);
    const before = (await ctx.deps.claims.list(companyPrincipal(c), { limit: 100 })).data.length;
    await page.getByRole('button', { name: 'Save claim' }).click();
    await page.getByText('The claim was saved.').waitFor();
    await expectFits(page);
    await reload(page);
    await page.getByText('The claim was saved.').waitFor();
    expect((await ctx.deps.claims.list(companyPrincipal(c), { limit: 100 })).data).toHaveLength(before + 1);
    await page.close();
  });

  it('an import, the same file imported again after the question, and a file of plates: one of each', async () => {
    const page = await onPhone(c.member.email);
    const imports = async () => (await ctx.deps.imports.list(companyPrincipal(c), { limit: 100 })).data.length;
    const file = { name: 'reload.csv', mimeType: 'text/csv', buffer: Buffer.from(csv([validRow(), validRow()])) };
    const before = await imports();
    await page.goto(`${base}/imports`);
    await page.locator('form[data-enhanced="true"]').waitFor();
    await page.getByLabel('CSV file').setInputFiles(file);
    await page.getByRole('button', { name: 'Upload and import' }).click();
    await page.getByText('Import finished: 2 imported, 0 failed.').waitFor({ timeout: 30_000 });
    await expectFits(page);
    await reload(page);
    await page.getByText('Import finished: 2 imported, 0 failed.').waitFor();
    expect(await imports()).toBe(before + 1);

    await page.goto(`${base}/imports`);
    await page.locator('form[data-enhanced="true"]').waitFor();
    await page.getByLabel('CSV file').setInputFiles(file);
    await page.getByRole('button', { name: 'Upload and import' }).click();
    await page.getByRole('heading', { level: 1, name: 'Import this file again?' }).waitFor();
    await page.getByRole('button', { name: 'Import it again' }).click();
    await page.getByText('Import finished: 2 imported, 0 failed.').waitFor({ timeout: 30_000 });
    expect(await reload(page)).toMatch(/^\/imports\/[0-9a-f-]{36}$/u);
    await page.getByText('Import finished: 2 imported, 0 failed.').waitFor();
    expect(await imports()).toBe(before + 2);

    const batches = async () =>
      (await ctx.deps.db.query<{ n: number }>('SELECT count(*)::int AS n FROM lookup_batches WHERE company_id = $1', [c.id]))[0]!.n;
    const batchesBefore = await batches();
    await page.goto(`${base}/lookups/batch`);
    await page.getByLabel('File (.csv or .txt)').setInputFiles({
      name: 'plates.csv',
      mimeType: 'text/csv',
      buffer: Buffer.from(`vehicle_registration\n${plate()}\n`),
    });
    await page.getByRole('button', { name: 'Check the plates' }).click();
    await page.waitForURL((u) => /^\/lookups\/batch\/[0-9a-f-]{36}$/u.test(u.pathname));
    await expectFits(page);
    await reload(page);
    expect(await batches()).toBe(batchesBefore + 1);
    await page.close();
  });

  it("the operator's Create a company and Add a person: one company, one person", async () => {
    const operatorEmail = `operator-${randomBytes(3).toString('hex')}@registry.example`;
    await ctx.deps.companies.createUser({ companyId: null, email: operatorEmail, password: PASSWORD, role: 'operator' });
    const page = await onPhone(operatorEmail);
    await page.goto(`${base}/operator`);
    const name = `Reload Mutual ${randomBytes(3).toString('hex')}`;
    await page.getByLabel('Company name').fill(name);
    await page.getByRole('button', { name: 'Create company' }).click();
    await page.getByRole('heading', { level: 1, name }).waitFor();
    await reload(page);
    await page.getByRole('heading', { level: 1, name }).waitFor();
    const made = (await ctx.deps.companies.listCompanies()).filter((co) => co.name === name);
    expect(made).toHaveLength(1);

    const email = `first-${randomBytes(3).toString('hex')}@reload.example`;
    await page.getByLabel('Email').fill(email);
    await page.getByRole('button', { name: 'Add person' }).click();
    await page.getByRole('heading', { level: 1, name: 'Person added' }).waitFor();
    const password = await page.locator('#first-password').inputValue();
    await reload(page);
    await page.getByRole('heading', { level: 1, name }).waitFor();
    expect(await page.content()).not.toContain(password);
    expect(await ctx.deps.companies.listUsers(made[0]!.id)).toHaveLength(1);
    await page.close();
  });
});
