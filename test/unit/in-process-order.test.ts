import pino from 'pino';
import { describe, expect, it } from 'vitest';

import type { ImportProcessor } from '../../src/workers/import-csv.processor';
import { createInProcessImportQueue } from '../../src/workers/in-process-runner';
import { importPriority } from '../../src/workers/queues';

describe('the order imports are taken in (one company does not hold up another)', () => {
  it('in process: lowest rank first, equal ranks in the order queued', async () => {
    const queue = createInProcessImportQueue({ concurrency: 1, attempts: 1, log: pino({ level: 'silent' }) });
    const ran: string[] = [];
    const processor: ImportProcessor = async (job) => {
      ran.push(job.data.importId);
      return { importId: job.data.importId, status: 'completed', imported: 0, failed: 0, alreadyDone: false };
    };
    // Company A's backlog of three, then B's first file, then A's fourth and C's first.
    for (const [id, rank] of [
      ['a1', 1],
      ['a2', 2],
      ['a3', 3],
      ['b1', 1],
      ['a4', 4],
      ['c1', 1],
      ['b2', 2],
    ] as const)
      await queue.enqueue(id, rank);
    await queue.enqueue('unranked'); // rank 1 when left out
    queue.start(processor);
    await queue.waitFor('a4', 5000);
    expect(ran).toEqual(['a1', 'b1', 'c1', 'unranked', 'a2', 'b2', 'a3', 'a4']);
    await queue.close();
  });

  it('on BullMQ: the rank is the priority, 1 at least (0 would go ahead of every prioritized job), within its range', () => {
    expect([importPriority(), importPriority(0), importPriority(1), importPriority(19), importPriority(5e6)]).toEqual([
      1, 1, 1, 19, 2_097_151,
    ]);
  });
});
