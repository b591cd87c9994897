import { DelayedError, type Job, type Queue, WaitingChildrenError } from 'bullmq';

import { RangeWaiting } from '../domain/imports/chunk-run';
import type { ProcessOutcome, SplitPlan } from '../domain/imports/import-run';
import type { ImportService } from '../domain/imports/import-service';
import type { ImportProcessor } from './import-csv.processor';
import { IMPORT_RANGE_JOB, importJobOptions, importRangeJobId, type JobData } from './queues';

/** How long a range that gave its worker up (RangeWaiting) stays aside before it is taken again. */
const RANGE_RETRY_DELAY_MS = 1000;

export type ImportSplitDeps = {
  imports: Pick<ImportService, 'process' | 'split' | 'processRange' | 'finishRanges'>;
  processor: ImportProcessor;
  /** Where the ranges go: the import queue itself; absent when this worker splits no file (IMPORT_SPLIT_BYTES 0). */
  queue: Queue | undefined;
  splitBytes: number;
  attempts: number;
};

/**
 * One file across several workers (BullMQ's parent and child jobs). An import's job whose file is
 * larger than IMPORT_SPLIT_BYTES starts the run, plans the file's ranges (range-plan.ts) and queues
 * one child job per range, with its own priority, then waits for its children; once every range
 * has completed, BullMQ runs it again and it completes the import. A range that fails for good
 * fails the import (and its parent job, which the API waits for); a cancel stops every range at its
 * next chunk; a killed worker's range is taken by another worker once its lock has expired, and goes
 * on after its committed chunks. A smaller file is imported whole, as without splitting.
 */
export function importSplitter(deps: ImportSplitDeps) {
  const { imports, processor, queue } = deps;

  /** The job of an import (its first or its last step). */
  async function importJob(job: Job<JobData<'claims-import', 'import-csv'>>, token: string | undefined): Promise<ProcessOutcome> {
    if (job.data.ranges !== undefined) return processor(job, (id) => imports.finishRanges(id));
    if (!queue) return processor(job);
    // The plan is made inside the processor, so that a bad or missing file fails the import as always.
    let plan: SplitPlan | undefined;
    const outcome = await processor(job, async (id, opts) => {
      plan = await imports.split(id, deps.splitBytes);
      if (plan.kind === 'whole') return imports.process(id, opts);
      if (plan.kind === 'done') return plan.outcome;
      return { importId: id, status: 'processing', imported: 0, failed: 0, alreadyDone: false };
    });
    if (plan?.kind !== 'ranges') return outcome;
    const parent = { id: job.id!, queue: job.queueQualifiedName };
    await queue.addBulk(
      plan.ranges.map((range) => ({
        name: IMPORT_RANGE_JOB,
        data: { importId: job.data.importId, range },
        opts: {
          jobId: importRangeJobId(job.data.importId, range.index),
          ...importJobOptions(deps.attempts, job.opts.priority ?? 1),
          parent,
          // A range that fails for good fails the import's job, which the API waits for.
          failParentOnFailure: true,
        },
      })),
    );
    await job.updateData({ ...job.data, ranges: plan.ranges.length });
    if (token !== undefined && (await job.moveToWaitingChildren(token))) throw new WaitingChildrenError();
    // Every range already done (a first step run again): the import completes now.
    return processor(job, (id) => imports.finishRanges(id));
  }

  /** A range's job. One that waited too long for an earlier range gives its worker up for a while. */
  async function rangeJob(job: Job<JobData<'claims-import', 'import-range'>>, token: string | undefined): Promise<ProcessOutcome> {
    try {
      return await processor(job, (id, opts) => imports.processRange(id, job.data.range, opts));
    } catch (err) {
      if (!(err instanceof RangeWaiting) || token === undefined) throw err;
      await job.moveToDelayed(Date.now() + RANGE_RETRY_DELAY_MS, token);
      throw new DelayedError();
    }
  }

  return { importJob, rangeJob };
}
