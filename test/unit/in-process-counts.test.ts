import pino from 'pino';
import { describe, expect, it } from 'vitest';

import { PermanentImportFailure, type ImportProcessor } from '../../src/workers/import-csv.processor';
import { createInProcessBatchQueue, createInProcessImportQueue } from '../../src/workers/in-process-runner';

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

describe('in-process runner of batch look-ups (the same runner as the imports)', () => {
  it('runs queued batches once started, one at a time, and marks a batch failed once its last attempt failed', async () => {
    const queue = createInProcessBatchQueue({ attempts: 1, log: pino({ level: 'silent' }) });
    const ran: string[] = [];
    const failed: string[] = [];
    let running = 0;
    let most = 0;
    await queue.enqueue('b1');
    await queue.enqueue('broken');
    await queue.enqueue('b2');
    await queue.enqueue('b1'); // queued already: not twice
    expect(queue.counts()).toEqual({ waiting: 3, active: 0, failed: 0 });
    queue.start({
      async process(id) {
        most = Math.max(most, ++running);
        await Promise.resolve();
        running--;
        if (id === 'broken') throw new Error('lost');
        ran.push(id);
      },
      async markFailed(id) {
        failed.push(id);
      },
    });
    await queue.waitFor('b2', 5000);
    expect({ ran, failed, most }).toEqual({ ran: ['b1', 'b2'], failed: ['broken'], most: 1 });
    expect(queue.counts()).toEqual({ waiting: 0, active: 0, failed: 1 });
    await queue.close();
    await expect(queue.enqueue('late')).rejects.toThrow('shutting down');
  });
});
