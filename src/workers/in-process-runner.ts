import type { Logger } from 'pino';

import { ImportBusy } from '../domain/imports/chunk-run';
import { QueueUnavailable, type ImportQueue } from '../domain/imports/import-service';
import { BatchQueueUnavailable, type BatchQueue, type LookupBatchService } from '../domain/lookups/lookup-batch';
import { PermanentImportFailure, type ImportJob, type ImportProcessor } from './import-csv.processor';
import { retryDelayMs } from './retry';

/** How long a settled run stays known, so a waiter arriving late still learns it is done. */
const SETTLED_TTL_MS = 60_000;

/** One run of a job: its id, and how many attempts failed before this one out of how many. */
export type RunJob = (id: string, attempt: { attemptsMade: number; attempts: number }) => Promise<unknown>;

export type InProcessRunner = {
  readonly kind: 'in-process';
  /** False once closing: a job can no longer be queued. */
  available(): boolean;
  /** Starts taking jobs; those queued before wait for it. */
  start(run: RunJob): void;
  /** Queues a job once (a job queued or running already is not queued again), after every waiting job of the same rank or lower. */
  enqueue(id: string, rank?: number): Promise<void>;
  /** Resolves when the job has settled or `timeoutMs` has passed; never rejects for the job's own failure. */
  waitFor(id: string, timeoutMs: number): Promise<void>;
  /** Jobs waiting and running now, and those that failed for good since the server started. */
  counts(): { waiting: number; active: number; failed: number };
  /** Lets running jobs finish (no further attempt is made); queued ones stay in the database for the next start. */
  close(): Promise<void>;
};

export type InProcessRunnerOptions = {
  /** What a job is, in log lines ("import"), and the log field of its id ("importId"). */
  what: string;
  idField: string;
  concurrency: number;
  attempts: number;
  log: Logger;
  /** The error of a job queued while the server shuts down (the API answers 503). */
  unavailable: (message: string) => Error;
  /** A failure another attempt cannot mend: 'failed' (counted as failed for good) or 'stopped' (not a failure); else undefined. */
  final?: (err: unknown) => 'failed' | 'stopped' | undefined;
  /** After a job's last attempt failed. */
  onFailedForGood?: (id: string) => Promise<void>;
};

/**
 * Without REDIS_URL, jobs run inside the server with the same work and the same retry rule
 * (retry.ts) as on BullMQ, a bounded number at a time, lowest rank first and equal ranks in the
 * order queued (as BullMQ's priorities). The database stays the source of truth: a server stopped
 * mid-job finds the job unfinished at its next start and runs it again.
 */
export function createInProcessRunner(opts: InProcessRunnerOptions): InProcessRunner {
  const { concurrency, attempts, log } = opts;
  let runJob: RunJob | undefined;
  let closed = false;
  /** In the order they will run: lowest rank first, equal ranks in the order queued. */
  const waiting: { id: string; rank: number }[] = [];
  const runs = new Map<string, Promise<void>>();
  const resolvers = new Map<string, () => void>();
  let active = 0;
  let failed = 0;

  const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

  async function run(id: string): Promise<void> {
    const ids = { [opts.idField]: id };
    for (let attemptsMade = 0; ;) {
      try {
        await runJob!(id, { attemptsMade, attempts });
        return;
      } catch (err) {
        const final = opts.final?.(err);
        if (final) {
          if (final === 'failed') failed++;
          log.info({ ...ids, err }, `${opts.what} stopped`);
          return;
        }
        attemptsMade++;
        if (closed) {
          log.warn({ ...ids, err }, `${opts.what} attempt failed while the server stops; it runs again at the next start`);
          return;
        }
        if (attemptsMade >= attempts) {
          failed++;
          log.error({ ...ids, err }, `${opts.what} failed for good`);
          await opts.onFailedForGood?.(id).catch((e: unknown) => log.error({ ...ids, err: e }, `could not mark the ${opts.what} failed`));
          return;
        }
        log.warn({ ...ids, err, attempt: attemptsMade }, `${opts.what} attempt failed; retrying`);
        await sleep(retryDelayMs(attemptsMade));
        if (closed) return;
      }
    }
  }

  function pump(): void {
    while (runJob && active < concurrency && waiting.length > 0) {
      const { id } = waiting.shift()!;
      active++;
      void run(id).finally(() => {
        active--;
        resolvers.get(id)?.();
        resolvers.delete(id);
        setTimeout(() => runs.delete(id), SETTLED_TTL_MS).unref();
        pump();
      });
    }
  }

  return {
    kind: 'in-process',
    available: () => !closed,
    counts: () => ({ waiting: waiting.length, active, failed }),
    start(r) {
      runJob = r;
      pump();
    },
    async enqueue(id, rank = 1) {
      if (closed) throw opts.unavailable('the server is shutting down');
      if (runs.has(id)) return;
      runs.set(id, new Promise<void>((resolve) => resolvers.set(id, resolve)));
      // After every waiting job of the same rank or lower: a company's n-th file waits for the
      // other companies' n-th files, not for their whole backlog.
      const at = waiting.findIndex((w) => w.rank > rank);
      waiting.splice(at === -1 ? waiting.length : at, 0, { id, rank });
      pump();
    },
    async waitFor(id, timeoutMs) {
      const settled = runs.get(id);
      if (!settled) return;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([settled, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
      clearTimeout(timer);
    },
    async close() {
      closed = true;
      waiting.length = 0;
      const running = [...runs.entries()].filter(([id]) => resolvers.has(id)).map(([, p]) => p);
      await Promise.allSettled(running);
    },
  };
}

export type InProcessImportQueue = ImportQueue & Omit<InProcessRunner, 'start'> & { start(processor: ImportProcessor): void };

/**
 * The import jobs: WORKER_CONCURRENCY at a time, each run by the import processor the BullMQ worker
 * uses (which marks the import failed on its last attempt); a bad file or a missing import is not
 * retried, nor a run another one is ahead of (ImportBusy).
 */
export function createInProcessImportQueue(opts: { concurrency: number; attempts: number; log: Logger }): InProcessImportQueue {
  const runner = createInProcessRunner({
    ...opts,
    what: 'import',
    idField: 'importId',
    unavailable: (message) => new QueueUnavailable(message),
    final: (err) => (err instanceof PermanentImportFailure ? 'failed' : err instanceof ImportBusy ? 'stopped' : undefined),
  });
  return {
    ...runner,
    start(processor) {
      runner.start(async (importId, { attemptsMade, attempts }) => {
        const job: ImportJob = { data: { importId }, attemptsMade, opts: { attempts }, updateProgress: async () => {} };
        await processor(job);
      });
    },
  };
}

export type InProcessBatchQueue = BatchQueue &
  Omit<InProcessRunner, 'start'> & { start(service: Pick<LookupBatchService, 'process' | 'markFailed'>): void };

/** The batch look-ups: one at a time (as the BullMQ worker's); a batch whose last attempt failed is marked failed. */
export function createInProcessBatchQueue(opts: { attempts: number; log: Logger }): InProcessBatchQueue {
  let service: Pick<LookupBatchService, 'process' | 'markFailed'> | undefined;
  const runner = createInProcessRunner({
    concurrency: 1,
    attempts: opts.attempts,
    log: opts.log,
    what: 'batch look-up',
    idField: 'batchId',
    unavailable: (message) => new BatchQueueUnavailable(message),
    onFailedForGood: (batchId) => service!.markFailed(batchId),
  });
  return {
    ...runner,
    start(s) {
      service = s;
      runner.start((batchId) => s.process(batchId));
    },
  };
}
