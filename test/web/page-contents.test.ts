import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { WEBHOOK_EVENTS } from '../../src/domain/webhooks/webhook-service';
import { createTestContext, plate, submitClaim, type TestContext } from '../harness';
import { companyWithPeople, PASSWORD, signedIn, totpCode, WebClient } from './web-client';

// What a few pages show a person (issue 54's "answers and forms that help"): every webhook event
// the service sends, a plate file's counts on its result page, recovery codes to copy or
// download, and /docs as the registry's API reference. The layout of every page is checked in the
// browser (test/browser/layout.browser.test.ts).

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx?.close());

describe('Settings › Webhooks', () => {
  it('names every event type the service sends', async () => {
    const c = await companyWithPeople(ctx);
    const page = await (await signedIn(ctx, c.admin.email)).get('/settings/webhooks');
    expect(page.statusCode).toBe(200);
    const events = /<ul class="event-list"[^>]*>([\s\S]*?)<\/ul>/u.exec(page.body)?.[1] ?? '';
    const named = [...events.matchAll(/<code class="event">([^<]+)<\/code>/gu)].map((m) => m[1]);
    expect(named).toEqual([...WEBHOOK_EVENTS]);
    expect(named).toContain('alerts.created');
  });
});

describe('Settings › Webhooks, with its own timeout and retry schedule', () => {
  it('says when a delivery is tried again as the settings say', async () => {
    const own = await createTestContext({ WEBHOOK_TIMEOUT_SECONDS: '5', WEBHOOK_RETRY_SCHEDULE: '30,120,86400' });
    try {
      const c = await companyWithPeople(own);
      const page = await (await signedIn(own, c.admin.email)).get('/settings/webhooks');
      expect(page.body).toContain('no 2xx answer within 5 seconds is retried after 30 seconds, 2 minutes and 1 day.');
    } finally {
      await own.close();
    }
  });
});

describe('the plate file result page', () => {
  it('shows the counts of the check on the page: rows, plates, found, not found, their claims, unusable rows', async () => {
    const c = await companyWithPeople(ctx, 'Counts');
    const other = await ctx.newCompany('Counts other');
    const found = plate();
    await submitClaim(ctx, other, { vehicle_registration: found });
    await submitClaim(ctx, other, { vehicle_registration: found, claim_date: '2026-01-15' });
    const web = await signedIn(ctx, c.member.email);
    await web.get('/lookups/batch');
    // Five rows: the found plate twice (checked once), a plate nobody has, one that is no plate.
    const file = `vehicle_registration,note\n${found},a\n${found.toLowerCase()},again\n${plate()},b\n???,c\n${plate()},d\n`;
    const res = await web.postMultipart('/lookups/batch', { _csrf: web.lastCsrf }, { name: 'plates.csv', content: file });
    expect(res.statusCode, res.body).toBe(303);
    const url = res.headers.location!;
    await expect.poll(async () => (await web.get(url)).body, { timeout: 30_000 }).toContain('Download the results (CSV)');
    const page = (await web.get(url)).body;
    const count = (name: string) => new RegExp(`<dd data-count="${name}">([^<]*)</dd>`, 'u').exec(page)?.[1];
    expect({
      rows: count('rows'),
      plates: count('plates'),
      found: count('found'),
      notFound: count('not-found'),
      claims: count('claims'),
      invalid: count('invalid'),
    }).toEqual({ rows: '5', plates: '3', found: '1', notFound: '2', claims: '2', invalid: '1' });
    expect(page).toContain('<dt>Plates found in the registry</dt>');
  });
});

describe('recovery codes', () => {
  it('are offered as a text file made in the page, and a Copy button the script shows; the page after shows them no more', async () => {
    const c = await companyWithPeople(ctx);
    const t = Date.now();
    const web = new WebClient(ctx.app);
    await web.signIn(c.member.email, PASSWORD, t);
    await web.get('/settings/security');
    const setup = await web.post('/settings/security/second-factor');
    const key = /id="totp-key"[^>]*value="([A-Z2-7 ]+)"/u.exec(setup.body)![1]!.replaceAll(' ', '');
    const done = await web.post('/settings/security/second-factor/confirm', { code: totpCode(key, t) });
    expect(done.statusCode).toBe(200);
    const codes = [...done.body.matchAll(/<li>([a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4})<\/li>/gu)].map((m) => m[1]!);
    expect(codes).toHaveLength(10);
    const link = /<a class="button button-secondary" href="data:text\/plain;charset=utf-8,([^"]+)" download="recovery-codes.txt">/u.exec(
      done.body,
    );
    expect(link).not.toBeNull();
    const text = decodeURIComponent(link![1]!.replaceAll('&#39;', "'"));
    expect(text.split('\n').filter((l) => /^[a-z2-7]{4}-/u.test(l))).toEqual(codes);
    expect(done.body).toMatch(/<button type="button" class="button button-secondary" data-copy="recovery-codes" hidden>Copy<\/button>/u);
    expect(done.body).toContain('id="recovery-codes"');
    expect(done.headers['cache-control']).toBe('no-store');
    const after = await web.get('/settings/security');
    for (const code of codes) expect(after.body).not.toContain(code);
  });
});

describe('the API reference at /docs', () => {
  it("is titled and marked as the registry's, and loads the document from its own address", async () => {
    const page = await ctx.app.inject({ method: 'GET', url: '/docs' });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<title>API reference · Claims Registry</title>');
    expect(page.body).not.toContain('<title>Swagger UI</title>');
    const icon = /<link rel="icon" type="image\/svg\+xml" href="([^"]+)"/u.exec(page.body)?.[1];
    expect(icon).toBe('/docs/static/theme/favicon.svg');
    const favicon = await ctx.app.inject({ method: 'GET', url: icon! });
    expect(favicon.headers['content-type']).toBe('image/svg+xml');
    expect(favicon.body).toContain('fill="#123a63"');

    const init = (await ctx.app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' })).body;
    // The definition named and loaded by its own address (Swagger UI takes `urls` over the plugin's /docs/json).
    expect(init).toContain('"urls":[{"url":"/api/v1/openapi.json","name":"Claims Registry API (/api/v1/openapi.json)"}]');
    // The top bar's mark: the registry's, not the library's.
    const logo = /img\.src = 'data:image\/svg\+xml;base64,([A-Za-z0-9+/=]+)'/u.exec(init)?.[1];
    expect(Buffer.from(logo!, 'base64').toString('utf8')).toContain('Claims Registry API');
    // The address named there serves the document.
    const spec = await ctx.app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
    expect(spec.json().info.title).toBe('Claims Registry API');
  });
});
