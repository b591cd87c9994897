import { randomBytes } from 'node:crypto';

import type { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startBatchWorker } from '../../src/workers/lookup-batch-queue';
import { createTestContext, submitClaim, type TestContext } from '../harness';
import { plate, postLookupBatch } from '../import-helpers';

/**
 * Batch plate look-ups in queue mode: the API adds a BullMQ job carrying the batch id only, and a
 * worker (startBatchWorker, as `npm run worker` starts it) runs it.
 */
const redisUrl = process.env.TEST_REDIS_URL!;
const prefix = `test-batch-${randomBytes(4).toString('hex')}`;

describe('batch look-ups through BullMQ', () => {
  let ctx: TestContext;
  let redis: Redis;
  let worker: Worker | undefined;

  beforeAll(async () => {
    ctx = await createTestContext({ REDIS_URL: redisUrl, QUEUE_PREFIX: prefix, WORKER_LOCK_SECONDS: '5' });
    redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
    const queue = ctx.deps.batchQueue as { available?: () => boolean };
    for (let i = 0; i < 50 && !queue.available?.(); i++) await new Promise((r) => setTimeout(r, 100));
  });

  afterAll(async () => {
    await worker?.close();
    await ctx?.close();
    if (redis) {
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    }
  });

  it('stays queued until a worker runs the job, which carries the batch id only', async () => {
    const [me, other] = [await ctx.newCompany('Queue batch'), await ctx.newCompany('Queue other')];
    const p = plate();
    await submitClaim(ctx, other, { vehicle_registration: p });
    const res = await postLookupBatch(ctx.app, me.auth, `vehicle_registration\n${p}\n`);
    expect(res.statusCode, res.body).toBe(202);
    const { id, status } = res.json().data;
    expect(status).toBe('queued');
    const job = await (ctx.deps.batchQueue as unknown as { bull: Queue }).bull.getJob(`batch-${id}`);
    expect(job?.data).toEqual({ batchId: id });

    worker = startBatchWorker(ctx.deps.lookupBatches, ctx.config, pino({ level: 'silent' }));
    await expect
      .poll(
        async () => (await ctx.app.inject({ method: 'GET', url: `/api/v1/lookups/batch/${id}`, headers: me.auth })).json().data.status,
        {
          timeout: 30_000,
        },
      )
      .toBe('completed');
    const csv = await ctx.app.inject({ method: 'GET', url: `/api/v1/lookups/batch/${id}/results.csv`, headers: me.auth });
    expect(csv.body).toContain(`${p},1,1,`);
  });
});
