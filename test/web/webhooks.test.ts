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
    expect(list.body).toContain('<code>import.completed</code>');

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
    expect(res.body).toContain('The url must use https.');
    expect(res.body).toContain('value="http://claims.example.com/hooks"');
    expect(await ctx.deps.webhooks.listEndpoints(c.id)).toEqual([]);
  });
});
