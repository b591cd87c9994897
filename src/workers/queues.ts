import { type Job, Queue, QueueEvents, type JobsOptions, type RedisOptions as BullRedisOptions } from 'bullmq';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';

import { QueueUnavailable, type ImportQueue } from '../domain/imports/import-service';
import { RETRY_BACKOFF } from './retry';

/**
 * Every queue, its job names and their payloads, in one typed map. Payloads carry ids only: job
 * data is visible in Bull Board and kept in Redis, so no personal data ever goes into it.
 */
export type JobMap = {
  'claims-import': {
    'import-csv': { importId: string };
  };
};
export type QueueName = keyof JobMap;
export type JobName<Q extends QueueName> = keyof JobMap[Q] & string;
export type JobData<Q extends QueueName, N extends JobName<Q> = JobName<Q>> = JobMap[Q][N];

export const IMPORT_QUEUE = 'claims-import' satisfies QueueName;
export const IMPORT_JOB = 'import-csv' satisfies JobName<'claims-import'>;

/** The business job id of an import: one job per import, so a duplicate add is a no-op. */
export const importJobId = (importId: string): string => `import-${importId}`;

/** BullMQ's highest (least urgent) job priority. */
const LOWEST_PRIORITY = 2_097_151;

/**
 * An import's BullMQ priority: its rank among its company's unfinished imports. BullMQ takes the
 * lowest number first and equal numbers in the order added; a job without one (0) would go ahead
 * of every prioritized job, so every import job has one, 1 at least.
 */
export const importPriority = (rank = 1): number => Math.min(Math.max(1, Math.trunc(rank)), LOWEST_PRIORITY);

/** An import job's options. */
export const importJobOptions = (attempts: number, priority: number) =>
  ({
    // Kept through retries (BullMQ re-adds a retried job with its priority).
    priority,
    attempts,
    backoff: RETRY_BACKOFF,
    removeOnComplete: { age: 24 * 3600, count: 1000 },
    removeOnFail: { age: 7 * 24 * 3600 },
    // Failed jobs keep their message only: no stack trace is stored or shown in Bull Board.
    stackTraceLimit: 0,
  }) satisfies JobsOptions;

/** How long the API waits for Redis before answering 503, instead of hanging. */
const PRODUCER_TIMEOUT_MS = 3000;

/**
 * Adds a job under its business id. BullMQ ignores an add whose id exists, which makes enqueueing
 * idempotent; the id must not contain ':' nor be all digits (BullMQ's own ids).
 */
export async function enqueue<Q extends QueueName, N extends JobName<Q>>(
  queue: Queue,
  name: N,
  data: JobData<Q, N>,
  opts: JobsOptions & { jobId: string },
): Promise<Job> {
  if (opts.jobId.includes(':') || /^\d+$/u.test(opts.jobId)) throw new Error('A job id must not contain ":" nor be all digits');
  return queue.add(name, data, opts);
}

/** Workers and QueueEvents block on Redis: BullMQ requires them to retry forever. */
export function workerConnection(url: string): BullRedisOptions {
  return { url, maxRetriesPerRequest: null, connectionName: 'claims-worker' };
}

/**
 * The API's connection: commands fail at once while Redis is down (no offline queue, one retry),
 * so an import gets a quick 503 and nothing else waits on Redis.
 */
export function producerConnection(url: string, log: Logger): Redis {
  const redis = new Redis(url, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    connectTimeout: 2000,
    connectionName: 'claims-api',
    retryStrategy: (times) => Math.min(times * 500, 5000),
  });
  let lastLogged = 0;
  redis.on('error', (err: Error) => {
    // Reconnects are retried every few seconds; say so at most once a minute.
    if (Date.now() - lastLogged > 60_000) {
      lastLogged = Date.now();
      log.warn({ err }, 'redis unreachable; imports answer 503 until it is back');
    }
  });
  return redis;
}

/**
 * BullMQ needs Redis to keep every key: with any eviction policy but noeviction, Redis may drop
 * jobs or locks under memory pressure, and imports would be lost or run twice.
 */
export async function checkEvictionPolicy(redis: Pick<Redis, 'info'>, log: Logger): Promise<void> {
  try {
    const info = await redis.info('memory');
    const policy = /maxmemory_policy:(\S+)/u.exec(info)?.[1];
    if (policy && policy !== 'noeviction') {
      log.error(
        { maxmemoryPolicy: policy },
        `REDIS IS MISCONFIGURED: maxmemory-policy is "${policy}"; BullMQ needs "noeviction" or jobs can be lost. Set maxmemory-policy noeviction.`,
      );
    }
  } catch (err) {
    log.warn({ err }, 'could not read the Redis maxmemory-policy; make sure it is noeviction');
  }
}

export async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new QueueUnavailable(`${what} timed out`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export type BullImportQueue = ImportQueue & {
  readonly kind: 'bullmq';
  readonly bull: Queue;
  /** Import jobs by state, for the metrics' gauge: waiting counts the delayed and prioritized too. */
  depth(): Promise<{ waiting: number; active: number; failed: number }>;
};

/**
 * The producer side of the import queue, used by the API: adds jobs and waits for them through
 * QueueEvents, always with a time limit (a removed job or a missed event must not hang a request).
 */
export function createBullImportQueue(opts: { url: string; prefix: string; attempts: number; log: Logger }): BullImportQueue {
  const { url, prefix, attempts, log } = opts;
  const connection = producerConnection(url, log);
  connection.once('ready', () => void checkEvictionPolicy(connection, log));
  const queue = new Queue(IMPORT_QUEUE, { connection, prefix });
  queue.on('error', () => {}); // reported once a minute by the connection's own handler
  let events: QueueEvents | undefined;

  const queueEvents = async () => {
    if (!events) {
      events = new QueueEvents(IMPORT_QUEUE, { connection: workerConnection(url), prefix });
      events.on('error', () => {});
    }
    await withTimeout(events.waitUntilReady(), PRODUCER_TIMEOUT_MS, 'queue events');
    return events;
  };

  return {
    kind: 'bullmq',
    bull: queue,
    available: () => connection.status === 'ready',
    async enqueue(importId, rank) {
      if (connection.status !== 'ready') throw new QueueUnavailable('redis not connected');
      try {
        await withTimeout(
          enqueue<'claims-import', 'import-csv'>(
            queue,
            IMPORT_JOB,
            { importId },
            { jobId: importJobId(importId), ...importJobOptions(attempts, importPriority(rank)) },
          ),
          PRODUCER_TIMEOUT_MS,
          'enqueue',
        );
      } catch (err) {
        throw err instanceof QueueUnavailable ? err : new QueueUnavailable((err as Error).message);
      }
    },
    async waitFor(importId, timeoutMs) {
      const started = Date.now();
      try {
        const job = await withTimeout(queue.getJob(importJobId(importId)), PRODUCER_TIMEOUT_MS, 'get job');
        if (!job) return;
        const qe = await queueEvents();
        const left = Math.max(1, timeoutMs - (Date.now() - started));
        await withTimeout(job.waitUntilFinished(qe, left), left + 1000, 'wait');
      } catch {
        // Failed for good, timed out or Redis gone: the caller reads the import's row either way.
      }
    },
    async depth() {
      const c = await queue.getJobCounts('waiting', 'delayed', 'prioritized', 'active', 'failed');
      return { waiting: (c.waiting ?? 0) + (c.delayed ?? 0) + (c.prioritized ?? 0), active: c.active ?? 0, failed: c.failed ?? 0 };
    },
    async close() {
      await events?.close().catch(() => {});
      await queue.close().catch(() => {});
      connection.disconnect();
    },
  };
}
