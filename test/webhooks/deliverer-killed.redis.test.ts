import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { enqueueWebhookEvent } from '../../src/domain/webhooks/webhook-service';
import { createTestContext, TEST_HASH_KEY, type TestContext } from '../harness';
import { freePort, kill, killAll, removeQueueKeys, startScript } from '../processes';
import { startReceiver } from './receiver';

/**
 * A deliverer (a real `npm run worker` process) SIGKILLed while its POST is in flight loses no
 * event: the delivery stays in the outbox, its lease runs out, and the restarted worker sends it.
 */
const redisUrl = process.env.TEST_REDIS_URL!;

describe('a webhook deliverer killed mid-delivery', () => {
  const prefix = `test-hook-${randomBytes(4).toString('hex')}`;
  let ctx: TestContext;
  let schema: string;

  beforeAll(async () => {
    ctx = await createTestContext({ REDIS_URL: redisUrl, QUEUE_PREFIX: prefix, WEBHOOK_ALLOW_PRIVATE: 'true' });
    schema = (await ctx.deps.db.query<{ s: string }>('SELECT current_schema() AS s'))[0]!.s;
  });
  afterAll(async () => {
    await killAll();
    await ctx?.close();
    await removeQueueKeys(redisUrl, prefix);
  });

  function startWorker(extraEnv: Record<string, string> = {}) {
    return startScript('worker', {
      DATABASE_URL: process.env.TEST_DATABASE_URL!,
      DB_SEARCH_PATH: schema,
      DB_POOL_SIZE: '2',
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: prefix,
      DOCUMENT_HASH_KEY: TEST_HASH_KEY,
      DATA_DIR: ctx.config.dataDir,
      WEBHOOK_ALLOW_PRIVATE: 'true',
      // A short attempt time keeps the lease (attempt time + 5 s) short for the test.
      WEBHOOK_TIMEOUT_SECONDS: '5',
      WEBHOOK_RETRY_SCHEDULE: '0,0,0,0,0',
      LOG_LEVEL: 'warn',
      ...extraEnv,
    });
  }

  it('is delivered by the restarted worker', async () => {
    const company = await ctx.newCompany('Hook');
    // The first request is never answered: the worker is killed while it waits.
    const r = await startReceiver((n) => (n === 1 ? 'hang' : 200));
    try {
      await ctx.deps.webhooks.createEndpoint(company.id, r.url);
      await ctx.deps.repos.transaction((tx) =>
        enqueueWebhookEvent(tx, { companyId: company.id, type: 'import.completed', payload: { id: 'the-import' } }),
      );
      const first = startWorker();
      await r.waitFor(1, 60_000);
      await kill(first, 'SIGKILL');

      const metricsPort = await freePort();
      startWorker({ WORKER_METRICS_PORT: String(metricsPort), HOST: '127.0.0.1' });
      const got = await r.waitFor(2, 60_000);
      expect(got[1]!.body).toBe(got[0]!.body);
      expect(JSON.parse(got[1]!.body)).toMatchObject({ type: 'import.completed', data: { id: 'the-import' } });
      await expect
        .poll(async () => (await ctx.deps.webhooks.listDeliveries(company.id))[0], { timeout: 10_000 })
        .toMatchObject({ status: 'delivered', attempts: 2, last_status_code: 200 });
      // The worker's own metrics (WORKER_METRICS_PORT) count the delivery.
      const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      expect(metrics).toMatch(/^claims_webhook_deliveries_total\{outcome="delivered",process="[^"]+"\} 1$/mu);
    } finally {
      await r.close();
    }
  }, 120_000);
});
