/**
 * Screenshots of the dashboard's main pages for docs/dashboard.md: `npm run screenshots`.
 * Starts the server on an in-memory database with demo data, drives Debian's Chromium
 * (/usr/bin/chromium) and writes docs/screenshots/*.png at 1366 × 900 and the same pages at 390 × 844
 * (docs/screenshots/mobile-*.png). SCREENSHOTS_ONLY=claims,search takes only those pages.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';

import pino from 'pino';
import type { Page } from 'playwright-core';

import { buildApp } from '../src/app';
import { loadConfig } from '../src/config';
import type { Deps } from '../src/deps';
import { openDeps } from '../src/startup';
import { CLAIM_STATUSES, CLAIM_TYPES } from '../src/domain/claims/claim';
import { lastMonths } from '../src/domain/dashboard/dashboard-service';
import type { Principal } from '../src/domain/principal';
import { launchChromium } from '../test/browser/chromium';
import { signInAs } from '../test/browser/sign-in';

const OUT = path.resolve('docs/screenshots');
const PASSWORD = 'demo-password-for-screenshots';
const FIRST = ['Ona', 'Jonas', 'Rūta', 'Mantas', 'Ieva', 'Tomas', 'Greta', 'Lukas', 'Eglė', 'Paulius', 'Aistė', 'Darius'];
const LAST = ['Petraitė', 'Jonaitis', 'Kazlauskas', 'Vasiliauskas', 'Žukauskaitė', 'Butkus', 'Paulauskas', 'Urbonaitė'];

// A fixed pseudo-random sequence, so the pictures do not change from run to run.
let seed = 7;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;
const docNumber = () => `P${randomBytes(5).toString('hex').toUpperCase()}`;

async function seed_(deps: Deps) {
  const company = await deps.companies.createCompany('Baltic Mutual');
  const other = await deps.companies.createCompany('Nordic Assurance');
  const admin = await deps.companies.createUser({
    companyId: company.id,
    email: 'ieva@baltic-mutual.example',
    password: PASSWORD,
    role: 'admin',
  });
  await deps.companies.createUser({ companyId: company.id, email: 'tomas@baltic-mutual.example', password: PASSWORD, role: 'member' });
  const principal: Principal = { companyId: company.id, companyName: company.name, tokenId: null, userId: null };
  const today = deps.today();
  const months = lastMonths(today, 12);
  const statuses = [
    'filed',
    'filed',
    'filed',
    'under_investigation',
    'under_investigation',
    'settled',
    'settled',
    'settled',
    'closed',
    'disputed',
  ] as const;
  for (const [i, month] of months.entries()) {
    const count = 6 + Math.round(rnd() * 10 + i * 1.5);
    for (let n = 0; n < count; n++) {
      const day = String(1 + Math.floor(rnd() * 27)).padStart(2, '0');
      const date = `${month}-${day}` > today ? today : `${month}-${day}`;
      await deps.claims.submit(principal, {
        client: {
          first_name: pick(FIRST),
          last_name: pick(LAST),
          date_of_birth: `19${60 + Math.floor(rnd() * 40)}-0${1 + Math.floor(rnd() * 9)}-1${Math.floor(rnd() * 9)}`,
          id_documents: [{ type: 'passport', number: docNumber() }],
        },
        claim_date: date,
        vehicle_registration: `${pick(['KLM', 'ABC', 'HGT', 'JRE', 'MVB'])}${100 + Math.floor(rnd() * 899)}`,
        claim_type: pick(CLAIM_TYPES),
        amount: Math.round(rnd() * 900_000) / 100,
        is_at_fault: rnd() > 0.5,
        status: pick(statuses),
      });
    }
  }
  // A plate with claims at two companies, for the search picture.
  const shared = {
    first_name: 'Mantas',
    last_name: 'Butkus',
    date_of_birth: '1979-04-12',
    id_documents: [{ type: 'national_id', number: docNumber() }],
  };
  const matched = await deps.claims.submit(principal, {
    client: shared,
    claim_date: today,
    vehicle_registration: 'KLM-482',
    claim_type: 'accident',
    amount: '1840.00',
    status: 'under_investigation',
  });
  await deps.claims.submit(
    { ...principal, companyId: other.id, companyName: other.name },
    { client: shared, claim_date: months[3] + '-14', vehicle_registration: 'KLM482', claim_type: 'theft', amount: 5200, status: 'settled' },
  );
  const used = await deps.tokens.create(company.id, 'Claims system (production)', admin.user.id);
  await deps.tokens.authenticate(used.token);
  await deps.tokens.create(company.id, 'Data warehouse export', admin.user.id);
  const old = await deps.tokens.create(company.id, 'Old broker integration', admin.user.id);
  await deps.tokens.revoke(old.id, company.id);
  void CLAIM_STATUSES;
  await deps.claims.updateStatus({ ...principal, userId: admin.user.id }, matched.id, 'settled');
  await deps.claims.searchByPlate({ ...principal, userId: admin.user.id }, 'KLM482', 'Claim 2026/118');
  await deps.webhooks.createEndpoint(company.id, 'https://claims.baltic-mutual.example/hooks/registry');
  await deps.companies.createUser({ companyId: null, email: 'operator@registry.example', password: PASSWORD, role: 'operator' });
  return { email: admin.user.email, claimId: matched.id };
}

function importFile(today: string): Buffer {
  const rows = ['first_name,last_name,date_of_birth,id_type,id_number,claim_date,vehicle_registration,claim_type,amount'];
  for (let i = 0; i < 40; i++)
    rows.push(
      `${pick(FIRST)},${pick(LAST)},1980-0${1 + (i % 9)}-15,passport,${docNumber()},${today},HGT${200 + i},accident,${100 + i * 7}.50`,
    );
  rows.splice(5, 0, `Jonas,Jonaitis,1990-01-01,passport,${docNumber()},2999-01-01,CD456,theft,300`);
  rows.splice(12, 0, `,Kazlauskas,1970-05-05,national_id,${docNumber()},${today},EF789,other,12.345`);
  rows.splice(20, 0, `Rūta,Rutaitė,1992-02-02,driving_licence,${docNumber()},${today},GH000,accident,80`);
  return Buffer.from(rows.join('\n'));
}

/** The pages pictured at both widths, and their file names (`claim` is the seeded claim's page). */
const PAGES = [
  ['/', 'overview'],
  ['/claims', 'claims'],
  ['claim', 'claim'],
  ['/search?plate=klm+482&purpose=Claim+2026%2F118', 'search'],
  ['/lookups', 'lookups'],
  ['/imports', 'imports'],
  ['/settings/tokens', 'api-tokens'],
  ['/settings/people', 'people'],
  ['/settings/webhooks', 'webhooks'],
] as const;

async function shot(page: Page, name: string, fullPage = true) {
  await page.screenshot({ path: path.join(OUT, `${name}.png`), fullPage });
  console.log(`docs/screenshots/${name}.png`);
}

async function main() {
  fs.mkdirSync(OUT, { recursive: true });
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'claims-screenshots-'));
  const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent' });
  const deps = await openDeps(config);
  deps.startJobRunners();
  const app = await buildApp(deps, { logger: pino({ level: 'silent' }) });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const browser = await launchChromium({ width: 1366, height: 900 });
  try {
    const { email, claimId } = await seed_(deps);
    const page = await browser.context.newPage();
    await page.goto(`${base}/login`);
    await page.getByLabel('Email').fill(email);
    await shot(page, 'sign-in', false);
    await signInAs(page, base, email, PASSWORD);
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
    await shot(page, 'overview');
    await page.goto(`${base}/claims`);
    await shot(page, 'claims', false);
    await page.goto(`${base}/search?plate=klm+482`);
    await shot(page, 'search', false);
    await page.goto(`${base}/settings/tokens`);
    await page.getByLabel('Token name').fill('Claims system (staging)');
    await page.getByRole('button', { name: 'Create Token' }).click();
    await page.getByText('It will not be shown again.').waitFor();
    await shot(page, 'api-token-created');
    await page.goto(`${base}/settings/tokens`);
    await shot(page, 'api-tokens');
    await page.goto(`${base}/imports`);
    await page.locator('form[data-enhanced="true"]').waitFor();
    await page
      .getByLabel('CSV file')
      .setInputFiles({ name: 'claims-november.csv', mimeType: 'text/csv', buffer: importFile(deps.today()) });
    await page.getByRole('button', { name: 'Upload and import' }).click();
    await page.getByText(/Import finished/u).waitFor({ timeout: 60_000 });
    await shot(page, 'import-results');
    const importUrl = new URL(page.url()).pathname;
    await page.goto(`${base}/claims/new`);
    await page.getByRole('button', { name: 'Save claim' }).click();
    await page.getByText('The claim was not saved').waitFor();
    await shot(page, 'claim-form-errors');

    // Every main page at a desktop width and at a phone's: what a person sees on opening it.
    const only = process.env.SCREENSHOTS_ONLY?.split(',');
    for (const [width, height, prefix] of [
      [1366, 900, ''],
      [390, 844, 'mobile-'],
    ] as const) {
      await page.setViewportSize({ width, height });
      for (const [url, name] of PAGES) {
        if (only && !only.includes(name)) continue;
        await page.goto(`${base}${url === 'claim' ? `/claims/${claimId}` : url}`);
        await shot(page, `${prefix}${name}`, false);
      }
      if (!only) {
        await page.goto(`${base}${importUrl}`);
        await shot(page, `${prefix}import-results`, false);
      }
    }
    // The operator's area.
    const op = await browser.context.newPage();
    await browser.context.clearCookies();
    await op.goto(`${base}/login`);
    // The operator sets up the second factor operators must have, at this first sign-in.
    await signInAs(op, base, 'operator@registry.example', PASSWORD);
    await op.getByRole('heading', { name: 'Companies', level: 1 }).waitFor();
    for (const [width, height, prefix] of [
      [1366, 900, ''],
      [390, 844, 'mobile-'],
    ] as const) {
      await op.setViewportSize({ width, height });
      await op.reload();
      await shot(op, `${prefix}operator`, false);
    }
  } finally {
    await browser.close();
    await app.close();
    await deps.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
