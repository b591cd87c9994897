import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

import closeWithGrace from 'close-with-grace';
import { Redis } from 'ioredis';

import { ConfigError, loadConfig } from './config';
import { DatabaseLockedError } from './db/db';
import { StartupError, type ChunkHooks } from './deps';
import { startRetentionSchedule } from './domain/registry/retention-schedule';
import { createLogger } from './logger';
import { serveMetrics } from './metrics';
import { openDeps } from './startup';
import { createHeapTrim, exposeGc, IMPORT_WORKER_HEAP_GROWTH_BYTES } from './workers/heap-trim';
import { startImportWorker } from './workers/import-worker';
import { startBatchWorker } from './workers/lookup-batch-queue';
import { checkEvictionPolicy } from './workers/queues';

/**
 * `npm run worker`: consumes the import queue. Run as many as needed (each takes
 * WORKER_CONCURRENCY jobs at a time). On SIGTERM it stops taking jobs and lets the running ones
 * finish (worker.close()); one still running after the grace period is abandoned, and another
 * worker takes it over once its lock expires, going on after its last committed chunk.
 */
const SHUTDOWN_GRACE_MS = 110_000;

/**
 * The worker process. `chunkHooks`: points in each import chunk's write that a worker's own entry
 * file observes (test/crash-worker.ts stops there); `npm run worker` passes none.
 */
export async function runWorker(chunkHooks: Pick<ChunkHooks, 'afterChunkCommit' | 'beforeChunkWrite'> = {}) {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  if (!config.redisUrl)
    throw new StartupError('npm run worker needs REDIS_URL (and DATABASE_URL); without REDIS_URL the server runs imports itself.');

  // The eviction-policy check runs once Redis answers; until then BullMQ keeps reconnecting.
  const probe = new Redis(config.redisUrl, { maxRetriesPerRequest: null, retryStrategy: (times) => Math.min(times * 1000, 10_000) });
  let warned = false;
  probe.on('error', (err: Error) => {
    if (!warned) logger.warn({ err }, 'redis not reachable yet; the worker keeps trying');
    warned = true;
  });
  probe.once('ready', () => void checkEvictionPolicy(probe, logger).finally(() => probe.disconnect()));

  // With or without --expose-gc on the command line (a supervisor's own command may leave it out).
  const trimHeap = createHeapTrim(IMPORT_WORKER_HEAP_GROWTH_BYTES, exposeGc());
  const deps = await openDeps(config, { logger, chunkHooks: { ...chunkHooks, whileChunkWrites: trimHeap } });
  const worker = startImportWorker(deps, config, logger);
  const batchWorker = startBatchWorker(deps.lookupBatches, config, logger);
  startRetentionSchedule(deps.registry, logger);
  // The workers deliver the webhook outbox when imports run on BullMQ.
  deps.startWebhookDelivery();
  const metricsServer =
    config.workerMetricsPort === undefined
      ? undefined
      : await serveMetrics(deps.metrics.registry, { port: config.workerMetricsPort, host: config.host });
  closeWithGrace({ delay: SHUTDOWN_GRACE_MS }, async ({ err, signal }) => {
    if (err) logger.error({ err }, 'worker closing after an error');
    else logger.info({ signal }, 'worker closing: finishing running imports');
    await worker.close();
    await batchWorker.close();
    await new Promise<void>((resolve) => (metricsServer ? metricsServer.close(() => resolve()) : resolve()));
    await deps.close();
  });
  await worker.waitUntilReady();
  logger.info({ concurrency: config.workerConcurrency, pid: process.pid }, 'import worker ready');
  // Claims of failed or cancelled imports that a stopped process did not finish removing.
  await deps.imports.purgeLeftovers().catch((err: unknown) => logger.error({ err }, 'could not remove the claims of failed imports'));
}

/** Exits 1 with a one-line message when the worker cannot start. */
export function exitOnStartFailure(err: unknown): never {
  if (err instanceof ConfigError || err instanceof StartupError || err instanceof DatabaseLockedError) {
    console.error(err.message);
  } else {
    console.error('Worker failed to start:', err instanceof Error ? err.message : err);
  }
  process.exit(1);
}

// Run when started as the program (`npm run worker`), not when a test's entry file imports it.
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) runWorker().catch(exitOnStartFailure);
