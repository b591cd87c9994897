import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { enqueueWebhookEvent } from '../../src/domain/webhooks/webhook-service';
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
    const web = await signedIn(ctx, c.member.email);
    const page = await web.get('/settings/webhooks');
    expect(page.statusCode).toBe(200);
    expect(page.body).toMatch(/<a href="\/settings\/webhooks" aria-current="page">Webhooks<\/a>/u);
    expect(page.body).toContain('No webhooks yet.');

    const created = await web.post('/settings/webhooks', { url: 'https://acme-hooks.example.net/registry' });
    expect(created.statusCode).toBe(201);
    expect(created.headers['cache-control']).toBe('no-store');
    expect(created.body).toContain('It will not be shown again');
    const secret = secretOf(created.body)!;
    expect(secret).toBeTruthy();

    await ctx.deps.store.transaction((tx) => enqueueWebhookEvent(tx, { companyId: c.id, type: 'import.completed', payload: {} }));
    const list = await web.get('/settings/webhooks');
    expect(list.body).toContain('https://acme-hooks.example.net/registry');
    expect(list.body).not.toContain(secret);
    expect(list.body).toContain('<code class="event">import.completed</code>');

    // Another company sees neither the endpoint nor its deliveries.
    const other = await companyWithPeople(ctx, 'Other');
    const otherPage = await (await signedIn(ctx, other.member.email)).get('/settings/webhooks');
    expect(otherPage.body).not.toContain('acme-hooks.example.net');
    expect(otherPage.body).toContain('No deliveries yet.');
  });

  it('refuses a URL that is not https, naming the problem next to the field', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.member.email);
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
    const web = await signedIn(ctx, c.member.email);
    await web.get('/settings/webhooks');
    await web.post('/settings/webhooks', { url: 'https://gone-hooks.example.net/registry' });
    const [endpoint] = await ctx.deps.webhooks.listEndpoints(c.id);
    await ctx.deps.store.transaction((tx) => enqueueWebhookEvent(tx, { companyId: c.id, type: 'import.completed', payload: {} }));
    expect(await ctx.deps.webhooks.listDeliveries(c.id)).toHaveLength(1);
    expect((await web.get('/settings/webhooks')).body).toContain(`href="/settings/webhooks/${endpoint!.id}/delete"`);

    // Another company's people get a 404, on the page and on the form, and the endpoint stays.
    const other = await companyWithPeople(ctx, 'Other');
    const otherWeb = await signedIn(ctx, other.member.email);
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
