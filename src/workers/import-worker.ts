import { type Job, UnrecoverableError, Worker } from 'bullmq';
import type { Logger } from 'pino';

import type { Config } from '../config';
import { importMessages } from '../domain/imports/import-messages';
import { importCsvProcessor, PermanentImportFailure, type ImportProcessorDeps } from './import-csv.processor';
import { IMPORT_QUEUE, workerConnection, type JobData } from './queues';

/**
 * The consumer side of the import queue (`npm run worker`). Each job's lock is renewed while it
 * runs; a worker that dies loses it after `WORKER_LOCK_SECONDS`, and another worker then takes the
 * job again and goes on after the import's last committed chunk. A job that stalls twice fails for good.
 */
export function startImportWorker(
  deps: ImportProcessorDeps,
  config: Pick<Config, 'redisUrl' | 'queuePrefix' | 'workerConcurrency' | 'workerLockSeconds'>,
  log: Logger,
): Worker {
  if (!config.redisUrl) throw new Error('The import worker needs REDIS_URL');
  const processor = importCsvProcessor(deps);
  const lockDuration = config.workerLockSeconds * 1000;
  const worker = new Worker(
    IMPORT_QUEUE,
    async (job: Job<JobData<'claims-import', 'import-csv'>>) => {
      try {
        return await processor(job);
      } catch (err) {
        // BullMQ fails a job for good, without retries, on its own UnrecoverableError.
        if (err instanceof PermanentImportFailure) throw new UnrecoverableError(err.message);
        throw err;
      }
    },
    {
      connection: workerConnection(config.redisUrl),
      prefix: config.queuePrefix,
      concurrency: config.workerConcurrency,
      lockDuration,
      stalledInterval: lockDuration,
      maxStalledCount: 1,
    },
  );
  worker.on('active', (job) => log.info({ jobId: job.id, attempt: job.attemptsMade + 1 }, 'import job started'));
  worker.on('completed', (job) => log.info({ jobId: job.id }, 'import job completed'));
  worker.on('stalled', (jobId) => log.warn({ jobId }, 'import job stalled (its worker died or blocked); it will run again'));
  // Failures the processor never saw, such as a job that stalled too often, go through the same
  // state machine. The handler's work is tracked so that close() waits for it.
  const pending = new Set<Promise<void>>();
  worker.on('failed', (job, err) => {
    if (!job) return;
    const work = (async () => {
      const final = err instanceof UnrecoverableError || (await job.isFailed().catch(() => false));
      log.warn({ jobId: job.id, err, final }, 'import job failed');
      const importId: unknown = (job.data as { importId?: unknown } | undefined)?.importId;
      if (final && typeof importId === 'string') {
        await deps.imports.markFailed(importId, 'error', importMessages.failed).catch((e: unknown) => {
          log.error({ err: e, jobId: job.id }, 'could not mark the import failed');
        });
      }
    })();
    pending.add(work);
    void work.finally(() => pending.delete(work));
  });
  const close = worker.close.bind(worker);
  worker.close = async (force?: boolean) => {
    await close(force);
    await Promise.allSettled([...pending]);
  };
  worker.on('error', (err) => log.error({ err }, 'import worker error'));
  return worker;
}
