import os from 'node:os';

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { checkWebhookUrl, enqueueWebhookEvent } from '../../src/domain/webhooks/webhook-service';
import { createTestContext, type TestContext } from '../harness';
import { csv, futureDate, postImport, validRow } from '../import-helpers';
import { startReceiver, verifySignature } from './receiver';

/**
 * Signed webhooks with a real HTTP receiver. The server delivers them here (no REDIS_URL), with a
 * retry schedule of 0 seconds so that retries happen at once; private targets are allowed
 * (WEBHOOK_ALLOW_PRIVATE=true), since the receiver listens on 127.0.0.1.
 */
let ctx: TestContext;
const receivers: Awaited<ReturnType<typeof startReceiver>>[] = [];
beforeAll(async () => {
  ctx = await createTestContext({ WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_SCHEDULE: '0,0,0,0,0', WEBHOOK_TIMEOUT_SECONDS: '5' });
});
afterEach(async () => {
  for (const r of receivers.splice(0)) await r.close();
});
afterAll(async () => ctx?.close());

async function receiver(answer?: (n: number) => number | 'hang') {
  const r = await startReceiver(answer);
  receivers.push(r);
  return r;
}

describe('webhooks', () => {
  it('delivers import.completed, signed with the endpoint secret, with the import as payload', async () => {
    const company = await ctx.newCompany();
    const r = await receiver();
    const endpoint = await ctx.deps.webhooks.createEndpoint(company.id, r.url);
    expect(endpoint.secret).toMatch(/^whsec_/u);

    const sentFrom = Math.floor(Date.now() / 1000);
    const res = await postImport(ctx.app, company.auth, csv([validRow(), validRow({ claim_date: futureDate() })]));
    expect(res.statusCode, res.body).toBe(200);
    const [got] = await r.waitFor(1);
    const receivedBy = Math.ceil(Date.now() / 1000);
    expect(got!.headers['content-type']).toBe('application/json');
    expect(verifySignature(endpoint.secret, got!.headers['claims-signature'] as string, got!.body)).toBe(true);
    expect(verifySignature('whsec_another', got!.headers['claims-signature'] as string, got!.body)).toBe(false);
    const t = Number(/^t=(\d+)/u.exec(got!.headers['claims-signature'] as string)![1]);
    // Stamped when it was sent: between the upload and its receipt.
    expect(t).toBeGreaterThanOrEqual(sentFrom);
    expect(t).toBeLessThanOrEqual(receivedBy);
    const event = JSON.parse(got!.body);
    expect(event).toMatchObject({
      type: 'import.completed',
      id: expect.any(String),
      data: { status: 'completed', imported: 1, failed: 1 },
    });
    const imports = await ctx.app.inject({ method: 'GET', url: '/api/v1/imports', headers: company.auth });
    expect(event.data.id).toBe(imports.json().data[0].id);
    expect(got!.headers['claims-event']).toBe('import.completed');

    // The delivery and its outcome are listed; the secret is never listed.
    await expect
      .poll(() => ctx.deps.webhooks.listDeliveries(company.id))
      .toEqual([expect.objectContaining({ event_type: 'import.completed', status: 'delivered', attempts: 1, last_status_code: 200 })]);
    expect(JSON.stringify(await ctx.deps.webhooks.listEndpoints(company.id))).not.toContain(endpoint.secret);
  });

  it('retries: a receiver that answers 500 twice gets the third attempt, and the delivery is then delivered', async () => {
    const company = await ctx.newCompany();
    const r = await receiver((n) => (n <= 2 ? 500 : 200));
    await ctx.deps.webhooks.createEndpoint(company.id, r.url);
    await ctx.deps.repos.transaction((tx) =>
      enqueueWebhookEvent(tx, { companyId: company.id, type: 'import.failed', payload: { id: 'x' } }),
    );
    const got = await r.waitFor(3);
    // The same event and body each time.
    expect(new Set(got.map((g) => g.body)).size).toBe(1);
    await expect
      .poll(async () => (await ctx.deps.webhooks.listDeliveries(company.id))[0])
      .toMatchObject({ status: 'delivered', attempts: 3, last_status_code: 200 });
  });

  it('marks a delivery failed after the last retry of the schedule', async () => {
    const company = await ctx.newCompany();
    const r = await receiver(() => 503);
    await ctx.deps.webhooks.createEndpoint(company.id, r.url);
    await ctx.deps.repos.transaction((tx) => enqueueWebhookEvent(tx, { companyId: company.id, type: 'import.failed', payload: {} }));
    await r.waitFor(6); // the first attempt and 5 retries
    await expect
      .poll(async () => (await ctx.deps.webhooks.listDeliveries(company.id))[0])
      .toMatchObject({ status: 'failed', attempts: 6, last_status_code: 503 });
    expect(r.received).toHaveLength(6);
  });

  it('writes nothing for a status change that rolls back, and an event once however often it is written', async () => {
    const company = await ctx.newCompany();
    await ctx.deps.webhooks.createEndpoint(company.id, 'https://hooks.example.com/claims');
    await expect(
      ctx.deps.repos.transaction(async (tx) => {
        await enqueueWebhookEvent(tx, { companyId: company.id, type: 'import.completed', payload: {} });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await ctx.deps.webhooks.listDeliveries(company.id)).toEqual([]);
    for (let i = 0; i < 2; i++) {
      await ctx.deps.repos.transaction((tx) =>
        enqueueWebhookEvent(tx, { companyId: company.id, type: 'import.failed', payload: {}, key: 'import.failed:same' }),
      );
    }
    expect(await ctx.deps.webhooks.listDeliveries(company.id)).toHaveLength(1);
    // Another company sees none of them.
    const other = await ctx.newCompany();
    expect(await ctx.deps.webhooks.listDeliveries(other.id)).toEqual([]);
  });
});

describe('webhook targets', () => {
  it('must be https, without credentials, and not a private address unless WEBHOOK_ALLOW_PRIVATE', () => {
    expect(checkWebhookUrl('https://hooks.example.com/x', false)).toBe('https://hooks.example.com/x');
    for (const [url, message] of [
      ['http://hooks.example.com/x', 'The url must use https.'],
      ['ftp://hooks.example.com/x', 'The url must use https.'],
      ['not a url', 'The url must be a valid URL.'],
      ['https://user:pw@hooks.example.com/x', 'The url must not contain a user name or password.'],
      ['https://127.0.0.1/x', 'The url must not point to a loopback, private or link-local address.'],
      ['https://10.1.2.3/x', 'The url must not point to a loopback, private or link-local address.'],
      ['https://169.254.169.254/latest', 'The url must not point to a loopback, private or link-local address.'],
      ['https://[::1]/x', 'The url must not point to a loopback, private or link-local address.'],
      ['https://[::ffff:192.168.0.1]/x', 'The url must not point to a loopback, private or link-local address.'],
      ['https://localhost/x', 'The url must not point to a loopback, private or link-local address.'],
    ] as const) {
      expect(() => checkWebhookUrl(url, false), url).toThrow(message);
    }
    expect(checkWebhookUrl('http://127.0.0.1:8080/x', true)).toBe('http://127.0.0.1:8080/x');
  });

  it('are refused at delivery time when their name resolves to a private address', async () => {
    // A server with the default rule (no WEBHOOK_ALLOW_PRIVATE) and its own deliverer.
    const strict = await createTestContext();
    try {
      const company = await strict.newCompany();
      const r = await receiver();
      // A host name (not an address) passes the check at creation; the machine's own name
      // resolves to a loopback or private address (/etc/hosts).
      await strict.deps.webhooks.createEndpoint(company.id, `https://${os.hostname()}:${r.port}/hooks`);
      await strict.deps.repos.transaction((tx) =>
        enqueueWebhookEvent(tx, { companyId: company.id, type: 'import.completed', payload: {} }),
      );
      await expect.poll(async () => (await strict.deps.webhooks.listDeliveries(company.id))[0]?.status, { timeout: 15_000 }).toBe('failed');
      expect((await strict.deps.webhooks.listDeliveries(company.id))[0]).toMatchObject({
        attempts: 1,
        last_status_code: null,
        last_error: expect.stringMatching(/private/u),
      });
      expect(r.received).toHaveLength(0);
    } finally {
      await strict.close();
    }
  });
});
