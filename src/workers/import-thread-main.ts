import { parentPort, workerData } from 'node:worker_threads';

import { createDeps, systemClock } from '../deps';
import { ImportBusy } from '../domain/imports/chunk-run';
import { createLogger } from '../logger';
import { resolveDocumentHashKey } from '../secrets';
import { openDatabase } from '../startup';
import { createObjectStore } from '../storage/object-store';
import { createHeapTrim, IMPORT_WORKER_HEAP_GROWTH_BYTES } from './heap-trim';
import { importCsvProcessor, PermanentImportFailure } from './import-csv.processor';
import type { ImportThreadData, ThreadReply, ThreadRequest } from './import-thread';
import { lowerThisThreadsPriority } from './thread-priority';

// The body of the server's import thread (import-thread.ts): its own connections to the database
// and the same import service and processor as a worker process. It runs the jobs it is sent and
// answers each with the outcome, or with the kind of failure, which the server's runner handles
// as it would a failure on its own thread. Webhooks are delivered by the server's thread.

const port = parentPort!;
const { config } = workerData as ImportThreadData;
const logger = createLogger(config.logLevel).child({ thread: 'imports' });
const reply = (msg: ThreadReply) => port.postMessage(msg);

try {
  lowerThisThreadsPriority(config.importThreadNice);
  // The server exposed `gc` before starting this thread: its heap is kept as a worker process keeps its own.
  const trimHeap = createHeapTrim(IMPORT_WORKER_HEAP_GROWTH_BYTES);
  // The server opened and prepared the database (migrations, the key's fingerprint) before it started this thread.
  const deps = await createDeps(config, {
    db: await openDatabase(config),
    documentHashKey: resolveDocumentHashKey(config),
    clock: systemClock(config),
    storage: createObjectStore(config),
    logger,
    chunkHooks: { whileChunkWrites: trimHeap },
  });
  const processor = importCsvProcessor({
    imports: deps.imports,
    metrics: { importFinished: (outcome) => reply({ metric: outcome }) },
  });
  port.on('message', (msg: ThreadRequest) => {
    if (msg.op === 'close') {
      // Ends this thread only; whatever the closing left behind does not keep it alive.
      void deps.close().finally(() => process.exit(0));
      return;
    }
    const job = {
      data: { importId: msg.importId },
      attemptsMade: msg.attemptsMade,
      opts: { attempts: msg.attempts },
      updateProgress: async () => {},
    };
    processor(job).then(
      (outcome) => reply({ id: msg.id, outcome }),
      (err: unknown) => {
        const kind = err instanceof PermanentImportFailure ? 'permanent' : err instanceof ImportBusy ? 'busy' : 'retry';
        const code = (err as { code?: unknown } | null)?.code;
        reply({
          id: msg.id,
          error: { kind, message: err instanceof Error ? err.message : String(err), ...(typeof code === 'string' ? { code } : {}) },
        });
      },
    );
  });
  reply({ ready: true });
  logger.info('import thread ready');
} catch (err) {
  reply({ failed: err instanceof Error ? err.message : String(err) });
  process.exit(1);
}
