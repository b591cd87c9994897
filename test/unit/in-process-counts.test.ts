import pino from 'pino';
import { describe, expect, it } from 'vitest';

import { PermanentImportFailure, type ImportProcessor } from '../../src/workers/import-csv.processor';
import { createInProcessImportQueue } from '../../src/workers/in-process-runner';

describe('in-process runner counts (the operator page in embedded mode)', () => {
  it('counts waiting, running and failed-for-good jobs', async () => {
    const queue = createInProcessImportQueue({ concurrency: 1, attempts: 1, log: pino({ level: 'silent' }) });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const processor: ImportProcessor = async (job) => {
      if (job.data.importId === 'slow') {
        await gate;
        return { importId: 'slow', status: 'completed', imported: 0, failed: 0, alreadyDone: false };
      }
      throw job.data.importId === 'broken' ? new PermanentImportFailure('bad file') : new Error('lost');
    };
    await queue.enqueue('slow');
    await queue.enqueue('broken');
    await queue.enqueue('flaky');
    expect(queue.counts()).toEqual({ waiting: 3, active: 0, failed: 0 });
    queue.start(processor);
    expect(queue.counts()).toEqual({ waiting: 2, active: 1, failed: 0 });
    release();
    await queue.waitFor('broken', 5000);
    await queue.waitFor('flaky', 5000);
    expect(queue.counts()).toEqual({ waiting: 0, active: 0, failed: 2 });
    await queue.close();
  });
});
