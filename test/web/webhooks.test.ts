import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { enqueueWebhookEvent, signatureHeader } from '../../src/domain/webhooks/webhook-service';
import { startReceiver } from '../webhooks/receiver';
import { createTestContext, type TestContext } from '../harness';
import { companyWithPeople, signedIn } from './web-client';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx.close());

const secretOf = (html: string) => /id="webhook-secret"[^>]*value="(whsec_[A-Za-z0-9_-]+)"/u.exec(html)?.[1];

describe('Settings › Webhooks', () => {
  it('is in the settings navigation; creates an endpoint, shows its secret once, and lists endpoints and deliveries', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.admin.email);
    const page = await web.get('/settings/webhooks');
    expect(page.statusCode).toBe(200);
    expect(page.body).toMatch(/<a href="\/settings\/webhooks" aria-current="page">Webhooks<\/a>/u);
    expect(page.body).toContain('No webhooks yet.');

    const posted = await web.post('/settings/webhooks', { url: 'https://acme-hooks.example.net/registry' });
    expect(posted.statusCode).toBe(303);
    const created = await web.get(posted.headers.location as string);
    expect(created.statusCode).toBe(200);
    expect(created.headers['cache-control']).toBe('no-store');
    expect(created.body).toContain('It will not be shown again');
    const secret = secretOf(created.body)!;
    expect(secret).toBeTruthy();

    await ctx.deps.repos.transaction((tx) => enqueueWebhookEvent(tx, { companyId: c.id, type: 'import.completed', payload: {} }));
    const list = await web.get('/settings/webhooks');
    expect(list.body).toContain('https://acme-hooks.example.net/registry');
    expect(list.body).not.toContain(secret);
    expect(list.body).toContain('<code class="event">import.completed</code>');

    // Another company sees neither the endpoint nor its deliveries.
    const other = await companyWithPeople(ctx, 'Other');
    const otherPage = await (await signedIn(ctx, other.admin.email)).get('/settings/webhooks');
    expect(otherPage.body).not.toContain('acme-hooks.example.net');
    expect(otherPage.body).toContain('No deliveries yet.');
  });

  it('refuses a URL that is not https, naming the problem next to the field', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.admin.email);
    await web.get('/settings/webhooks');
    const res = await web.post('/settings/webhooks', { url: 'http://claims.example.com/hooks' });
    expect(res.statusCode).toBe(422);
    expect(res.body).toContain('The endpoint URL must start with https:// (an encrypted connection).');
    expect(res.body).not.toContain('The url must use https.');
    expect(res.body).toContain('value="http://claims.example.com/hooks"');
    expect(await ctx.deps.webhooks.listEndpoints(c.id)).toEqual([]);
  });

  it('deletes an endpoint after a confirmation: its pending deliveries are not sent; another company cannot delete it', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.admin.email);
    await web.get('/settings/webhooks');
    await web.post('/settings/webhooks', { url: 'https://gone-hooks.example.net/registry' });
    const [endpoint] = await ctx.deps.webhooks.listEndpoints(c.id);
    await ctx.deps.repos.transaction((tx) => enqueueWebhookEvent(tx, { companyId: c.id, type: 'import.completed', payload: {} }));
    expect(await ctx.deps.webhooks.listDeliveries(c.id)).toHaveLength(1);
    expect((await web.get('/settings/webhooks')).body).toContain(`href="/settings/webhooks/${endpoint!.id}/delete"`);

    // Another company's people get a 404, on the page and on the form, and the endpoint stays.
    const other = await companyWithPeople(ctx, 'Other');
    const otherWeb = await signedIn(ctx, other.admin.email);
    await otherWeb.get('/settings/webhooks');
    expect((await otherWeb.get(`/settings/webhooks/${endpoint!.id}/delete`)).statusCode).toBe(404);
    expect((await otherWeb.post(`/settings/webhooks/${endpoint!.id}/delete`)).statusCode).toBe(404);
    // Without the form's CSRF token nothing is deleted either.
    expect((await web.post(`/settings/webhooks/${endpoint!.id}/delete`, {}, { csrf: null })).statusCode).toBe(403);
    expect(await ctx.deps.webhooks.listEndpoints(c.id)).toHaveLength(1);

    const confirm = await web.get(`/settings/webhooks/${endpoint!.id}/delete`);
    expect(confirm.statusCode).toBe(200);
    expect(confirm.body).toContain('https://gone-hooks.example.net/registry');
    const deleted = await web.post(`/settings/webhooks/${endpoint!.id}/delete`);
    expect(deleted.statusCode).toBe(303);
    expect(deleted.headers.location).toBe('/settings/webhooks?deleted=1');
    const after = await web.get('/settings/webhooks?deleted=1');
    expect(after.body).toContain('The webhook was deleted.');
    expect(after.body).not.toContain('gone-hooks.example.net');
    expect(await ctx.deps.webhooks.listEndpoints(c.id)).toEqual([]);
    expect(await ctx.deps.webhooks.listDeliveries(c.id)).toEqual([]);
    expect((await web.post(`/settings/webhooks/${endpoint!.id}/delete`)).statusCode).toBe(404);
  });
});

describe('Settings › Webhooks: test events and delivery states', () => {
  let local: TestContext;
  beforeAll(async () => {
    local = await createTestContext({ WEBHOOK_ALLOW_PRIVATE: 'true' });
  });
  afterAll(async () => local.close());

  it('sends a signed ping to the endpoint and shows the answer', async () => {
    const receiver = await startReceiver((n) => (n === 1 ? 204 : 500));
    try {
      const c = await companyWithPeople(local);
      const web = await signedIn(local, c.admin.email);
      await web.get('/settings/webhooks');
      const created = await web.submit('/settings/webhooks', { url: receiver.url });
      const secret = secretOf(created.body)!;
      const [endpoint] = await local.deps.webhooks.listEndpoints(c.id);
      await web.get('/settings/webhooks');
      const ok = await web.post(`/settings/webhooks/${endpoint!.id}/test`);
      expect(ok.statusCode).toBe(200);
      expect(ok.body).toContain('The test event was delivered.');
      expect(ok.body).toContain('your endpoint answered HTTP 204');
      const [ping] = receiver.received;
      expect(JSON.parse(ping!.body)).toMatchObject({ type: 'ping', data: { endpoint_id: endpoint!.id } });
      const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/u.exec(String(ping!.headers['claims-signature']))!;
      expect(signatureHeader(secret, ping!.body, Number(t))).toBe(`t=${t},v1=${v1}`);
      const failed = await web.post(`/settings/webhooks/${endpoint!.id}/test`);
      expect(failed.body).toContain('The test event was not delivered.');
      expect(failed.body).toContain('your endpoint answered HTTP 500');
      // A test event is not a delivery: nothing in the outbox.
      expect(await local.deps.webhooks.listDeliveries(c.id)).toEqual([]);
      // Another company cannot test it.
      const other = await companyWithPeople(local);
      const otherWeb = await signedIn(local, other.admin.email);
      await otherWeb.get('/settings/webhooks');
      expect((await otherWeb.post(`/settings/webhooks/${endpoint!.id}/test`)).statusCode).toBe(404);
      expect(receiver.received).toHaveLength(2);
    } finally {
      await receiver.close();
    }
  });

  it('tells each delivery state in words and links the import it is about', async () => {
    const c = await companyWithPeople(local);
    await local.deps.webhooks.createEndpoint(c.id, 'https://hooks.example.net/registry');
    const importId = '01a21329-0000-7000-8000-000000000001';
    await local.deps.repos.transaction((tx) =>
      enqueueWebhookEvent(tx, { companyId: c.id, type: 'import.completed', payload: { id: importId } }),
    );
    const web = await signedIn(local, c.admin.email);
    // The server's deliverer makes the first attempt (the host does not resolve here) and
    // schedules the next one.
    let delivery = (await local.deps.webhooks.listDeliveries(c.id))[0]!;
    for (let i = 0; i < 100 && delivery.attempts === 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
      delivery = (await local.deps.webhooks.listDeliveries(c.id))[0]!;
    }
    expect(delivery).toMatchObject({ status: 'pending', attempts: 1 });
    const retrying = await web.get('/settings/webhooks');
    expect(retrying.body).toContain(`<a href="/imports/${importId}">The import`);
    expect(retrying.body).toMatch(/<span class="badge badge-pending">Retrying<\/span> attempt 2 of 6, next at <time datetime="[^"]+">/u);
    await local.deps.repos.webhooks.settle(delivery.id, { status: 'failed', statusCode: 500, error: 'HTTP 500' });
    expect((await web.get('/settings/webhooks')).body).toMatch(/<span class="badge badge-failed">Failed<\/span> after \d+ attempts?, /u);
  });
});
