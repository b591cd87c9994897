import type { Logger } from 'pino';

import { ImportBusy, QueueUnavailable, type ImportQueue } from '../domain/imports/import-service';
import { PermanentImportFailure, type ImportJob, type ImportProcessor } from './import-csv.processor';

/** How long a settled run stays known, so a waiter arriving late still learns it is done. */
const SETTLED_TTL_MS = 60_000;

export type InProcessImportQueue = ImportQueue & {
  readonly kind: 'in-process';
  /** Starts taking jobs. */
  start(processor: ImportProcessor): void;
  /** Jobs waiting and running now, and those that failed for good since the server started. */
  counts(): { waiting: number; active: number; failed: number };
};

/**
 * Without REDIS_URL, import jobs run inside the server with the same processor the BullMQ worker
 * uses: the same attempts and backoff, a bounded number at a time, in the same order (by rank, see
 * ImportQueue.enqueue). The imports row stays the source of truth: a server stopped mid-import
 * finds the import unfinished at its next start and runs it again, going on after its last
 * committed chunk (nothing is doubled).
 */
export function createInProcessImportQueue(opts: { concurrency: number; attempts: number; log: Logger }): InProcessImportQueue {
  const { concurrency, attempts, log } = opts;
  let processor: ImportProcessor | undefined;
  let closed = false;
  /** In the order they will run: lowest rank first, equal ranks in the order queued (as BullMQ's priorities). */
  const waiting: { importId: string; rank: number }[] = [];
  const runs = new Map<string, Promise<void>>();
  const resolvers = new Map<string, () => void>();
  let active = 0;
  let failed = 0;

  const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

  async function run(importId: string): Promise<void> {
    const job: ImportJob = { data: { importId }, attemptsMade: 0, opts: { attempts }, updateProgress: async () => {} };
    for (;;) {
      try {
        await processor!(job);
        return;
      } catch (err) {
        if (err instanceof PermanentImportFailure || err instanceof ImportBusy) {
          if (err instanceof PermanentImportFailure) failed++;
          log.info({ importId, err }, 'import stopped');
          return;
        }
        job.attemptsMade++;
        if (job.attemptsMade >= attempts || closed) {
          failed++;
          log.error({ importId, err }, 'import failed for good');
          return;
        }
        log.warn({ importId, err, attempt: job.attemptsMade }, 'import attempt failed; retrying');
        await sleep(2000 * 2 ** (job.attemptsMade - 1));
      }
    }
  }

  function pump(): void {
    while (processor && active < concurrency && waiting.length > 0) {
      const { importId } = waiting.shift()!;
      active++;
      void run(importId).finally(() => {
        active--;
        resolvers.get(importId)?.();
        resolvers.delete(importId);
        setTimeout(() => runs.delete(importId), SETTLED_TTL_MS).unref();
        pump();
      });
    }
  }

  function add(importId: string, rank: number): void {
    if (runs.has(importId)) return;
    runs.set(importId, new Promise<void>((resolve) => resolvers.set(importId, resolve)));
    // After every waiting job of the same rank or lower: a company's n-th file waits for the other
    // companies' n-th files, not for their whole backlog.
    const at = waiting.findIndex((w) => w.rank > rank);
    waiting.splice(at === -1 ? waiting.length : at, 0, { importId, rank });
    pump();
  }

  return {
    kind: 'in-process',
    available: () => !closed,
    counts: () => ({ waiting: waiting.length, active, failed }),
    start(p) {
      processor = p;
      pump();
    },
    async enqueue(importId, rank = 1) {
      if (closed) throw new QueueUnavailable('the server is shutting down');
      add(importId, rank);
    },
    async waitFor(importId, timeoutMs) {
      const settled = runs.get(importId);
      if (!settled) return;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([settled, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
      clearTimeout(timer);
    },
    /** Lets running imports finish; queued ones stay queued in the database for the next start. */
    async close() {
      closed = true;
      waiting.length = 0;
      const running = [...runs.entries()].filter(([id]) => resolvers.has(id)).map(([, p]) => p);
      await Promise.allSettled(running);
    },
  };
}
