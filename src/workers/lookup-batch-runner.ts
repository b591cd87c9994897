import type { Logger } from 'pino';

import { BatchQueueUnavailable, type BatchQueue, type LookupBatchService } from '../domain/lookups/lookup-batch';

/**
 * Without REDIS_URL, batch look-ups run inside the server, one at a time, with the same service
 * the worker runs; a failed attempt is tried again (up to `attempts`), then the batch is failed.
 */
export function createInProcessBatchQueue(opts: { attempts: number; log: Logger }) {
  let service: Pick<LookupBatchService, 'process' | 'markFailed'> | undefined;
  let chain: Promise<void> = Promise.resolve();
  const queued = new Set<string>();
  let closed = false;

  async function run(batchId: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await service!.process(batchId);
        return;
      } catch (err) {
        if (attempt >= opts.attempts || closed) {
          opts.log.error({ batchId, err }, 'batch look-up failed for good');
          await service!.markFailed(batchId).catch(() => {});
          return;
        }
        opts.log.warn({ batchId, err, attempt }, 'batch look-up attempt failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, 500 * attempt));
      }
    }
  }

  const queue: BatchQueue & { kind: 'in-process'; start(s: typeof service): void; close(): Promise<void>; idle(): Promise<void> } = {
    kind: 'in-process',
    start(s) {
      service = s;
    },
    async enqueue(batchId) {
      if (closed) throw new BatchQueueUnavailable('the server is shutting down');
      if (queued.has(batchId)) return;
      queued.add(batchId);
      chain = chain.then(() => run(batchId)).finally(() => queued.delete(batchId));
    },
    idle: () => chain,
    async close() {
      closed = true;
      await chain;
    },
  };
  return queue;
}
