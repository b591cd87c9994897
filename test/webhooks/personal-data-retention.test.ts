import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { ObjectNotFound } from '../../src/domain/storage';
import { enqueueWebhookEvent } from '../../src/domain/webhooks/webhook-service';
import { addDays, claimBody, createTestContext, type TestContext } from '../harness';
import { csv, docNumber, plate, validRow } from '../import-helpers';
import { companyWithPeople, signedIn } from '../web/web-client';
import { startReceiver } from './receiver';

/**
 * Personal data kept no longer than needed (DECISIONS, "Access control, abuse limits and the audit
 * trail"): a webhook delivery's body goes WEBHOOK_RETENTION_DAYS after it was delivered or given
 * up, a dashboard upload never confirmed 24 hours after it was uploaded (both in the daily purge,
 * on a clock the test controls); the subject access export lists the deliveries that carry the
 * person; a dashboard plate search is a POST with the CSRF token. And webhook addresses: every
 * IANA special-purpose range refused, and an address written as an IP checked at each delivery.
 */
const DAY = 86_400_000;
let clock = Date.now();
let ctx: TestContext;
const receivers: Awaited<ReturnType<typeof startReceiver>>[] = [];
beforeAll(async () => {
  ctx = await createTestContext(
    { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_SCHEDULE: '0,0,0,0,0', WEBHOOK_TIMEOUT_SECONDS: '5', WEBHOOK_RETENTION_DAYS: '30' },
    { now: () => clock },
  );
});
afterEach(async () => {
  for (const r of receivers.splice(0)) await r.close();
  clock = Date.now();
});
afterAll(async () => ctx?.close());

const bodyOf = async (companyId: string) =>
  (
    await ctx.deps.db.query<{ body: string | null; status: string }>('SELECT body, status FROM webhook_deliveries WHERE company_id = $1', [
      companyId,
    ])
  )[0];

describe('webhook delivery bodies', () => {
  it('are listed in the subject access export while kept, and deleted WEBHOOK_RETENTION_DAYS after delivery (the record stays)', async () => {
    const r = await startReceiver();
    receivers.push(r);
    const [told, submitter] = [await ctx.newCompany('Told'), await ctx.newCompany('Submitter')];
    await ctx.deps.webhooks.createEndpoint(told.id, r.url);
    const shared = plate();
    const today = ctx.deps.today();
    const own = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims',
      headers: told.auth,
      payload: claimBody({ vehicle_registration: shared, claim_date: addDays(today, -20) }),
    });
    expect(own.statusCode).toBe(201);
    const number = docNumber();
    const dob = '1977-03-03';
    const theirs = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims',
      headers: submitter.auth,
      payload: claimBody(
        { vehicle_registration: shared, claim_date: addDays(today, -2) },
        { date_of_birth: dob, id_documents: [{ type: 'passport', number }] },
      ),
    });
    expect(theirs.statusCode).toBe(201);
    await r.waitFor(1);
    await expect.poll(async () => (await bodyOf(told.id))?.status).toBe('delivered');
    expect((await bodyOf(told.id))!.body).toContain(theirs.json().data.client.id);
    const exported = await ctx.deps.registry.subjectExport({ dateOfBirth: dob, idType: 'passport', idNumber: number });
    expect(exported.deliveries).toEqual([
      {
        company_name: told.name,
        event_type: 'alerts.created',
        status: 'delivered',
        created_at: expect.any(String),
        finished_at: expect.any(String),
      },
    ]);

    clock = Date.now() + 29 * DAY;
    await ctx.deps.registry.purge();
    expect((await bodyOf(told.id))!.body).not.toBeNull();

    clock = Date.now() + 31 * DAY;
    const removed = await ctx.deps.registry.purge();
    expect(removed.delivery_bodies).toBeGreaterThanOrEqual(1);
    expect(await bodyOf(told.id)).toEqual({ body: null, status: 'delivered' });
    expect(await ctx.deps.webhooks.listDeliveries(told.id)).toEqual([
      expect.objectContaining({ event_type: 'alerts.created', status: 'delivered' }),
    ]);
    const after = await ctx.deps.registry.subjectExport({ dateOfBirth: dob, idType: 'passport', idNumber: number });
    expect(after.deliveries).toEqual([]);
  });

  it('of a delivery not yet settled are kept, however old', async () => {
    const company = await ctx.newCompany('Pending');
    // An endpoint nobody answers at (no receiver): the delivery stays pending between its retries.
    await ctx.deps.db.query(`INSERT INTO webhook_endpoints (company_id, url, secret) VALUES ($1, 'http://127.0.0.1:9/x', 'whsec_x')`, [
      company.id,
    ]);
    await ctx.deps.db.query(
      `INSERT INTO webhook_deliveries (company_id, endpoint_id, event_key, event_id, event_type, body, next_attempt_at)
       SELECT $1, e.id, 'k', gen_random_uuid(), 'import.failed', '{"x":1}', now() + interval '1 day' FROM webhook_endpoints e WHERE e.company_id = $1`,
      [company.id],
    );
    clock = Date.now() + 365 * DAY;
    await ctx.deps.registry.purge();
    expect(await bodyOf(company.id)).toEqual({ body: '{"x":1}', status: 'pending' });
  });
});

describe('a dashboard upload never confirmed ("import this file again?")', () => {
  it('is deleted from storage 24 hours after it was uploaded', async () => {
    const c = await companyWithPeople(ctx, 'Uploader');
    const web = await signedIn(ctx, c.member.email);
    const file = csv([validRow()]);
    await web.get('/imports');
    expect((await web.postMultipart('/imports', { _csrf: web.lastCsrf }, { name: 'claims.csv', content: file })).statusCode).toBe(303);
    await web.get('/imports');
    const again = await web.postMultipart('/imports', { _csrf: web.lastCsrf }, { name: 'claims.csv', content: file });
    expect(again.headers.location).toBe('/imports/confirm');
    const [held] = await ctx.deps.db.query<{ object_key: string }>('SELECT object_key FROM pending_uploads WHERE company_id = $1', [c.id]);
    const stream = await ctx.deps.storage.getStream(held!.object_key);
    stream.destroy();

    clock = Date.now() + 23 * 3_600_000;
    expect((await ctx.deps.registry.purge()).uploads).toBe(0);
    (await ctx.deps.storage.getStream(held!.object_key)).destroy();

    clock = Date.now() + 25 * 3_600_000;
    expect((await ctx.deps.registry.purge()).uploads).toBe(1);
    await expect(ctx.deps.storage.getStream(held!.object_key)).rejects.toBeInstanceOf(ObjectNotFound);
    expect(await ctx.deps.db.query('SELECT 1 FROM pending_uploads WHERE company_id = $1', [c.id])).toEqual([]);
  });

  it('is no longer waiting once confirmed or dropped', async () => {
    const c = await companyWithPeople(ctx, 'Decider');
    const web = await signedIn(ctx, c.member.email);
    const file = csv([validRow()]);
    await web.get('/imports');
    await web.postMultipart('/imports', { _csrf: web.lastCsrf }, { name: 'claims.csv', content: file });
    await web.get('/imports');
    await web.postMultipart('/imports', { _csrf: web.lastCsrf }, { name: 'claims.csv', content: file });
    await web.get('/imports/confirm');
    expect((await web.post('/imports/confirm', { action: 'drop' })).headers.location).toBe('/imports?dropped=1');
    expect(await ctx.deps.db.query('SELECT 1 FROM pending_uploads WHERE company_id = $1', [c.id])).toEqual([]);
  });
});

describe('the dashboard plate search', () => {
  it('writes a look-up entry only as a POST with the CSRF token: a link (GET) records nothing', async () => {
    const c = await companyWithPeople(ctx, 'Searcher');
    const web = await signedIn(ctx, c.member.email);
    const wanted = plate();
    const log = async () =>
      (await ctx.app.inject({ method: 'GET', url: '/api/v1/lookups', headers: c.auth })).json().data as { vehicle_registration: string }[];
    const page = await web.get(`/search?plate=${wanted}&purpose=Link`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(`value="${wanted}"`);
    expect(await log()).toEqual([]);
    expect((await web.post('/search', { plate: wanted }, { csrf: null })).statusCode).toBe(403);
    expect((await web.post('/search', { plate: wanted }, { csrf: 'forged' })).statusCode).toBe(403);
    expect(await log()).toEqual([]);
    const searched = await web.post('/search', { plate: wanted, purpose: 'Own check' });
    expect(searched.statusCode).toBe(200);
    expect(await log()).toEqual([expect.objectContaining({ kind: 'plate_search', vehicle_registration: wanted, purpose: 'Own check' })]);
  });
});

describe('webhook addresses', () => {
  it('refuse the IANA special-purpose ranges, NAT64 and 6to4 included', async () => {
    const strict = await createTestContext();
    try {
      const company = await strict.newCompany();
      for (const url of [
        'https://[2002:7f00:1::1]/x',
        'https://[2002:a00:1::]/x',
        'https://[64:ff9b::7f00:1]/x',
        'https://[64:ff9b:1::a00:1]/x',
        'https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/x',
        'https://[2001:db8::1]/x',
        'https://[fec0::1]/x',
        'https://192.0.2.10/x',
        'https://198.51.100.1/x',
        'https://255.255.255.255/x',
        'https://100.64.0.1/x',
      ]) {
        await expect(strict.deps.webhooks.createEndpoint(company.id, url), url).rejects.toThrow(/loopback, private or link-local/u);
      }
      expect((await strict.deps.webhooks.createEndpoint(company.id, 'https://[2606:4700::1111]/x')).url).toBe(
        'https://[2606:4700::1111]/x',
      );
      expect((await strict.deps.webhooks.createEndpoint(company.id, 'https://1.1.1.1/x')).url).toBe('https://1.1.1.1/x');
    } finally {
      await strict.close();
    }
  });

  it('written as an IP address are checked again at each delivery (no name is looked up for them)', async () => {
    const strict = await createTestContext({ WEBHOOK_RETRY_SCHEDULE: '0,0,0,0,0' });
    try {
      const company = await strict.newCompany();
      // An endpoint stored before the rule (or while private targets were allowed).
      await strict.deps.db.query(
        `INSERT INTO webhook_endpoints (company_id, url, secret) VALUES ($1, 'https://127.0.0.1:9/x', 'whsec_x')`,
        [company.id],
      );
      await strict.deps.repos.transaction((tx) =>
        enqueueWebhookEvent(tx, { companyId: company.id, type: 'import.completed', payload: {} }),
      );
      await expect.poll(async () => (await strict.deps.webhooks.listDeliveries(company.id))[0]?.status, { timeout: 15_000 }).toBe('failed');
      expect((await strict.deps.webhooks.listDeliveries(company.id))[0]).toMatchObject({
        attempts: 1,
        last_status_code: null,
        last_error: expect.stringMatching(/private/u),
      });
    } finally {
      await strict.close();
    }
  });
});
