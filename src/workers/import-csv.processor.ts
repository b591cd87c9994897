import { setTimeout as sleep } from 'node:timers/promises';

import { isDatabaseUnavailable } from '../db/db';
import { InvalidImportFile } from '../domain/imports/csv-file';
import { ImportBusy, type ImportProgress } from '../domain/imports/chunk-run';
import { importMessages } from '../domain/imports/import-messages';
import { ImportGone, type ProcessOutcome } from '../domain/imports/import-run';
import type { ImportService } from '../domain/imports/import-service';
import { isUuid } from '../domain/ids';
import { StorageOutage } from '../domain/storage';
import type { ImportMetrics } from '../metrics';
import type { JobData } from './queues';

/** What the processor needs of a job: a BullMQ Job, or the in-process runner's stand-in. */
export type ImportJob = {
  data: JobData<'claims-import'>;
  attemptsMade: number;
  opts: { attempts?: number | undefined };
  updateProgress(progress: ImportProgress): Promise<unknown>;
};

/**
 * A failure that another attempt cannot mend (a bad file, a missing file or import). The BullMQ
 * worker turns it into its UnrecoverableError; the in-process runner stops at it. Kept free of
 * bullmq so that a server without REDIS_URL never loads the queue libraries.
 */
export class PermanentImportFailure extends Error {
  override readonly name = 'PermanentImportFailure';
}

export type ImportProcessorDeps = {
  imports: Pick<ImportService, 'process' | 'markFailed'>;
  metrics?: ImportMetrics;
  /** How a database outage is waited out within an attempt (DATABASE_OUTAGE by default). */
  databaseOutage?: { rideOutMs: number; pauseMs: number };
};

/**
 * A database outage (a restart, a failover: no primary for up to a minute with pg_auto_failover's
 * defaults) is waited out inside the attempt: the run starts again every `pauseMs` from its ledger,
 * for up to `rideOutMs` from the first failure, counting no attempt. Without it the attempts and
 * their backoff (2 s, then 4 s) were spent within seconds of the outage's start, and the last
 * attempt's failure could not even be recorded: the import stayed `processing` for ever.
 */
export const DATABASE_OUTAGE = { rideOutMs: 120_000, pauseMs: 1_000 };

const isLastAttempt = (job: ImportJob) => job.attemptsMade + 1 >= (job.opts.attempts ?? 1);

/**
 * A thin adapter from a job to ImportService.process. Permanent failures (a bad file, a missing
 * file or import) become PermanentImportFailure so they are not retried; anything else is rethrown so
 * the queue's attempts and backoff apply, and the import is marked failed on the last attempt.
 */
export function importCsvProcessor(deps: ImportProcessorDeps) {
  return async (job: ImportJob): Promise<ProcessOutcome> => {
    const importId = job.data?.importId;
    if (typeof importId !== 'string' || !isUuid(importId)) throw new PermanentImportFailure('The job carries no valid import id.');
    // Metrics (ops): one observation per import that ends here, completed or failed for good.
    const started = process.hrtime.bigint();
    const seconds = () => Number(process.hrtime.bigint() - started) / 1e9;
    const outage = deps.databaseOutage ?? DATABASE_OUTAGE;
    const run = async (): Promise<ProcessOutcome> => {
      let since: number | undefined;
      for (;;) {
        try {
          return await deps.imports.process(importId, { onProgress: async (p) => void (await job.updateProgress(p)) });
        } catch (err) {
          if (!isDatabaseUnavailable(err)) throw err;
          since ??= Date.now();
          if (Date.now() - since >= outage.rideOutMs) throw err;
          await sleep(outage.pauseMs);
        }
      }
    };
    try {
      const outcome = await run();
      if (!outcome.alreadyDone && (outcome.status === 'completed' || outcome.status === 'cancelled')) {
        deps.metrics?.importFinished({ status: outcome.status, imported: outcome.imported, failed: outcome.failed, seconds: seconds() });
      }
      return outcome;
    } catch (err) {
      if (err instanceof InvalidImportFile) {
        await deps.imports.markFailed(importId, 'invalid_file', err.message);
        deps.metrics?.importFinished({ status: 'failed', seconds: seconds() });
        throw new PermanentImportFailure(err.message);
      }
      // The storage stayed unreachable longer than STORAGE_RETRY_SECONDS: the import fails, saying why.
      if (err instanceof StorageOutage) {
        await deps.imports.markFailed(importId, 'error', importMessages.storageOutage(err.seconds));
        deps.metrics?.importFinished({ status: 'failed', seconds: seconds() });
        throw new PermanentImportFailure(err.message);
      }
      if (err instanceof ImportGone) {
        await deps.imports.markFailed(importId, 'error', importMessages.failed);
        deps.metrics?.importFinished({ status: 'failed', seconds: seconds() });
        throw new PermanentImportFailure(err.message);
      }
      // Busy: another run of the import is ahead of this one; this attempt just waits its turn.
      if (!(err instanceof ImportBusy) && isLastAttempt(job)) {
        await deps.imports.markFailed(importId, 'error', importMessages.failed);
        deps.metrics?.importFinished({ status: 'failed', seconds: seconds() });
      }
      throw err;
    }
  };
}
export type ImportProcessor = ReturnType<typeof importCsvProcessor>;
