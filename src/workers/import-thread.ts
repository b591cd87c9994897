import { Worker } from 'node:worker_threads';

import type { Logger } from 'pino';

import type { Config } from '../config';
import { ImportBusy } from '../domain/imports/chunk-run';
import type { ProcessOutcome } from '../domain/imports/import-run';
import type { ImportMetrics } from '../metrics';
import { PermanentImportFailure, type ImportJob, type ImportProcessor } from './import-csv.processor';

/** The server's configuration (DB_SEARCH_PATH included), with the thread's own pool size. */
export type ImportThreadData = { config: Config };
export type ThreadRequest = { op: 'run'; id: number; importId: string; attemptsMade: number; attempts: number } | { op: 'close' };
export type ThreadReply =
  | { ready: true }
  | { failed: string }
  | { metric: Parameters<ImportMetrics['importFinished']>[0] }
  | { id: number; outcome: ProcessOutcome }
  | { id: number; error: { kind: 'permanent' | 'busy' | 'retry'; message: string; code?: string } };

/** A failure of a job on the import thread, as the thread described it. */
class ImportThreadError extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'ImportThreadError';
  }
}

/** The import thread's young generation (V8's three semi-spaces: 4 MB each, as the worker's flag). */
const IMPORT_THREAD_YOUNG_GENERATION_MB = 12;

/**
 * Without REDIS_URL but with PostgreSQL, the server runs its imports on a thread of its own, with
 * its own connections (`(IMPORT_WRITERS + 1) × WORKER_CONCURRENCY + 1`: each running import holds up
 * to IMPORT_WRITERS chunk transactions and, with one, looks the next chunk's documents up beside it;
 * one more for the state changes). The import's
 * reading, parsing, validation and hashing then no longer take turns with the server's requests,
 * which answer during an import as they do beside a separate worker process (docs/import-pipeline.md).
 *
 * The thread starts with the server, and the next import starts it again after it died (the job
 * in flight fails with a retryable error and the runner's attempts apply; the import goes on after
 * its last committed chunk). `processor` has the in-process runner's shape: its failures are the
 * processor's own (PermanentImportFailure, ImportBusy), or retryable.
 */
export function startImportThread(opts: { config: Config; metrics: ImportMetrics; log: Logger }) {
  const data: ImportThreadData = {
    config: { ...opts.config, dbPoolSize: (opts.config.importWriters + 1) * opts.config.workerConcurrency + 1 },
  };
  const pending = new Map<number, { resolve: (o: ProcessOutcome) => void; reject: (err: Error) => void }>();
  let nextId = 0;
  let current: { thread: Worker; ready: Promise<Worker>; exited: Promise<void> } | undefined;
  let closed = false;

  function start() {
    // A small young generation, as the worker process's --max-semi-space-size: an import allocates
    // much that dies at once, and a large nursery only adds to the server's peak memory
    // (docs/performance.md, "third round").
    const thread = new Worker(new URL('./import-thread-entry.mjs', import.meta.url), {
      workerData: data,
      resourceLimits: { maxYoungGenerationSizeMb: IMPORT_THREAD_YOUNG_GENERATION_MB },
    });
    let opened!: (t: Worker) => void;
    let failed!: (err: Error) => void;
    const ready = new Promise<Worker>((resolve, reject) => ((opened = resolve), (failed = reject)));
    ready.catch((err: unknown) => opts.log.warn({ err }, 'the import thread did not start; the next import starts it again'));
    const gone = (err: Error) => {
      failed(err);
      for (const p of pending.values()) p.reject(err);
      pending.clear();
      if (current?.thread === thread) current = undefined;
    };
    thread.on('message', (msg: ThreadReply) => {
      if ('ready' in msg) return opened(thread);
      if ('failed' in msg) return gone(new ImportThreadError(`The import thread could not start: ${msg.failed}`));
      if ('metric' in msg) return opts.metrics.importFinished(msg.metric);
      const call = pending.get(msg.id);
      pending.delete(msg.id);
      if ('outcome' in msg) return call?.resolve(msg.outcome);
      const { kind, message, code } = msg.error;
      call?.reject(
        kind === 'permanent'
          ? new PermanentImportFailure(message)
          : kind === 'busy'
            ? new ImportBusy()
            : new ImportThreadError(message, code),
      );
    });
    thread.on('error', (err) => {
      opts.log.error({ err }, 'the import thread failed');
      gone(new ImportThreadError('The import thread stopped.'));
    });
    const exited = new Promise<void>((resolve) =>
      thread.once('exit', () => {
        gone(new ImportThreadError('The import thread stopped.'));
        resolve();
      }),
    );
    current = { thread, ready, exited };
    return current;
  }

  const processor: ImportProcessor = async (job: ImportJob) => {
    if (closed) throw new ImportThreadError('The server is shutting down.');
    const thread = await (current ?? start()).ready;
    const id = nextId++;
    return new Promise<ProcessOutcome>((resolve, reject) => {
      pending.set(id, { resolve, reject });
      const msg: ThreadRequest = {
        op: 'run',
        id,
        importId: job.data.importId,
        attemptsMade: job.attemptsMade,
        attempts: job.opts.attempts ?? 1,
      };
      thread.postMessage(msg);
    });
  };

  // Started with the server, so that the first import does not wait for it (about a second).
  start();
  return {
    processor,
    /** Stops the thread once its imports have ended (the runner waits for them first); it closes its connections. */
    async close(): Promise<void> {
      closed = true;
      if (!current) return;
      const { thread, exited } = current;
      thread.postMessage({ op: 'close' } satisfies ThreadRequest);
      await exited;
    },
  };
}
