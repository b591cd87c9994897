import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, submitClaim, type TestContext } from '../harness';
import { plate } from '../import-helpers';
import { companyWithPeople, PASSWORD, signedIn, WebClient } from './web-client';

/** The dashboard's alerts, plate-file and data-quality pages, and the operator's quality page. */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx?.close());

describe('dashboard: alerts', () => {
  it('lists the alerts with a count in the navigation, and the claim page lists its alerts', async () => {
    const c = await companyWithPeople(ctx, 'Web told');
    const other = await ctx.newCompany('Web other');
    const p = plate();
    const mine = await submitClaim(ctx, c, { vehicle_registration: p });
    const web = await signedIn(ctx, c.member.email);
    expect((await web.get('/claims')).body).not.toMatch(/Alerts <span class="count"/u);
    await submitClaim(ctx, other, { vehicle_registration: p, claim_date: mine.claim_date });

    const page = await web.get('/alerts');
    expect(page.statusCode).toBe(200);
    expect(page.body).toMatch(/Alerts <span class="count" aria-label="1 in the last 7 days">\(1\)<\/span>/u);
    expect(page.body).toContain('Match on the plate');
    expect(page.body).toContain(other.name);
    expect(page.body).toContain(`href="/claims/${mine.id}"`);
    const claimPage = await web.get(`/claims/${mine.id}`);
    expect(claimPage.body).toContain('Alerts of this claim');
    expect(claimPage.body).toContain(`${other.name} stored a claim of ${mine.claim_date} on the same plate`);
    // The alert is in the look-up log, under its own kind and no other, made by nobody of the
    // company (the claim page the member opened is three look-ups of theirs: matches, incident, network).
    const entries = (body: string) => [...body.matchAll(/<tr>\s*<td class="nowrap" data-label="When">[\s\S]*?<\/tr>/gu)].map((m) => m[0]);
    const [alert, ...others] = entries((await web.get('/lookups?kind=alert')).body);
    expect(others).toEqual([]);
    expect(alert).toContain('Alert received');
    expect(alert).toContain('The registry, unasked');
    expect(alert).toContain(p);
    expect(entries((await web.get('/lookups')).body)).toHaveLength(4);
    expect(entries((await web.get(`/lookups?who=user:${c.member.id}`)).body).join('')).not.toContain('Alert received');
    // The other company sees none of it.
    const theirs = await companyWithPeople(ctx, 'Web third');
    const theirWeb = await signedIn(ctx, theirs.member.email);
    expect((await theirWeb.get('/alerts')).body).toContain('No alerts yet.');
  });
});

describe('dashboard: plate file', () => {
  it('uploads a file, shows progress until done, offers the results; another company gets a 404', async () => {
    const c = await companyWithPeople(ctx, 'Web batch');
    const other = await ctx.newCompany('Web batch other');
    const p = plate();
    await submitClaim(ctx, other, { vehicle_registration: p });
    const web = await signedIn(ctx, c.member.email);
    await web.get('/lookups/batch');
    const res = await web.postMultipart(
      '/lookups/batch',
      { _csrf: web.lastCsrf, purpose: 'From the dashboard' },
      {
        name: 'plates.csv',
        content: `vehicle_registration\n${p}\n`,
      },
    );
    expect(res.statusCode, res.body).toBe(303);
    const url = res.headers.location!;
    expect(url).toMatch(/^\/lookups\/batch\/[0-9a-f-]{36}$/u);
    await expect.poll(async () => (await web.get(url)).body, { timeout: 30_000 }).toContain('Download the results (CSV)');
    const csv = await web.get(`${url}/results.csv`);
    expect(csv.body).toContain(`${p},1,1,`);

    const bad = await web.postMultipart('/lookups/batch', { _csrf: web.lastCsrf }, { name: 'plates.csv', content: 'plate\nAB1\n' });
    expect(bad.statusCode).toBe(422);
    expect(bad.body).toContain('The header row is missing the required column: vehicle_registration.');
    // No file chosen (what a browser sends: a file part with no name and no bytes), or no file
    // part at all: the import page's words (one upload form reader for both pages).
    for (const file of [{ name: '', content: '' }, null]) {
      const none = await web.postMultipart('/lookups/batch', { _csrf: web.lastCsrf }, file);
      expect(none.statusCode).toBe(422);
      expect(none.body).toContain('Choose a CSV file to upload: no file was chosen.');
      expect(none.body).not.toContain('must be a file of type');
    }

    const stranger = await companyWithPeople(ctx, 'Web batch stranger');
    const strangerWeb = await signedIn(ctx, stranger.member.email);
    expect((await strangerWeb.get(url)).statusCode).toBe(404);
    expect((await strangerWeb.get(`${url}/results.csv`)).statusCode).toBe(404);
  });
});

describe('dashboard: data quality', () => {
  it("shows the company's figures with charts, and the operator every company side by side", async () => {
    const c = await companyWithPeople(ctx, 'Web quality');
    await submitClaim(ctx, c, { amount: null });
    const web = await signedIn(ctx, c.member.email);
    const page = await web.get('/quality?days=30');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('registered in the last 30 days: 1');
    expect(page.body).toContain('<svg');
    expect(page.body).toMatch(/Amount: 100%/u);
    expect((await web.get('/operator/quality')).statusCode).toBe(403);

    const email = `operator-${Math.random().toString(36).slice(2, 8)}@registry.example`;
    await ctx.deps.companies.createUser({ companyId: null, email, password: PASSWORD, role: 'operator' });
    const op = new WebClient(ctx.app);
    await op.signIn(email, PASSWORD);
    const all = await op.get('/operator/quality');
    expect(all.statusCode).toBe(200);
    expect(all.body).toContain(c.name);
    expect(all.body).toContain('Data quality by company');
  });
});
