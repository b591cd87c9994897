import { Queue, Worker } from 'bullmq';
import type { Logger } from 'pino';

import type { Config } from '../config';
import { BatchQueueUnavailable, type BatchQueue, type LookupBatchService } from '../domain/lookups/lookup-batch';
import { producerConnection, withTimeout, workerConnection } from './queues';
import { RETRY_BACKOFF } from './retry';

export const BATCH_QUEUE = 'lookup-batches';
export const BATCH_JOB = 'lookup-batch';
const batchJobId = (batchId: string) => `batch-${batchId}`;

/** With REDIS_URL: the API adds a job per batch (its id only), the worker process runs it. */
export function createBullBatchQueue(opts: { url: string; prefix: string; attempts: number; log: Logger }) {
  const connection = producerConnection(opts.url, opts.log);
  const queue = new Queue(BATCH_QUEUE, { connection, prefix: opts.prefix });
  queue.on('error', () => {});
  const producer: BatchQueue & { kind: 'bullmq'; bull: Queue; available(): boolean; close(): Promise<void> } = {
    kind: 'bullmq',
    bull: queue,
    available: () => connection.status === 'ready',
    async enqueue(batchId) {
      if (connection.status !== 'ready') throw new BatchQueueUnavailable('redis not connected');
      try {
        await withTimeout(
          // Its id only (no personal data in Redis); one job per batch, so a repeated add is a no-op.
          queue.add(
            BATCH_JOB,
            { batchId },
            {
              jobId: batchJobId(batchId),
              attempts: opts.attempts,
              backoff: RETRY_BACKOFF,
              removeOnComplete: { age: 24 * 3600, count: 1000 },
              removeOnFail: { age: 7 * 24 * 3600 },
              stackTraceLimit: 0,
            },
          ),
          3000,
          'enqueue',
        );
      } catch (err) {
        throw new BatchQueueUnavailable((err as Error).message);
      }
    },
    async close() {
      await queue.close().catch(() => {});
      connection.disconnect();
    },
  };
  return producer;
}

/** The worker process's consumer of batch look-ups; a job failed for good fails its batch. */
export function startBatchWorker(
  service: Pick<LookupBatchService, 'process' | 'markFailed'>,
  config: Pick<Config, 'redisUrl' | 'queuePrefix' | 'workerConcurrency' | 'workerLockSeconds'>,
  log: Logger,
): Worker {
  if (!config.redisUrl) throw new Error('The batch worker needs REDIS_URL');
  const lockDuration = config.workerLockSeconds * 1000;
  const worker = new Worker(
    BATCH_QUEUE,
    async (job) => {
      await service.process((job.data as { batchId: string }).batchId);
    },
    {
      connection: workerConnection(config.redisUrl),
      prefix: config.queuePrefix,
      concurrency: 1,
      lockDuration,
      stalledInterval: lockDuration,
      maxStalledCount: 1,
    },
  );
  worker.on('failed', (job, err) => {
    if (!job) return;
    void (async () => {
      const final = await job.isFailed().catch(() => false);
      log.warn({ jobId: job.id, err, final }, 'batch look-up job failed');
      if (final) await service.markFailed((job.data as { batchId: string }).batchId).catch(() => {});
    })();
  });
  worker.on('error', (err) => log.error({ err }, 'batch worker error'));
  return worker;
}
