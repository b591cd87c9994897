import { randomBytes } from 'node:crypto';

import type { Job, Queue, Worker } from 'bullmq';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { importJobId } from '../../src/workers/queues';
import { startImportWorker } from '../../src/workers/import-worker';
import { createTestContext, type TestContext } from '../harness';
import { csv, postImport, validRow, waitForImport } from '../import-helpers';
import { removeQueueKeys, until } from '../processes';

/**
 * BullMQ mode against the real Redis of TEST_REDIS_URL (and PostgreSQL: REDIS_URL requires
 * DATABASE_URL, the embedded database being single-process). Each run uses its own queue
 * prefix and removes its keys afterwards.
 */
const redisUrl = process.env.TEST_REDIS_URL!;
const prefix = `test-import-${randomBytes(4).toString('hex')}`;
const log = pino({ level: 'silent' });

/** The job once BullMQ has recorded its end (the import's row is committed a moment before). */
const finishedJob = (queue: Queue, jobId: string): Promise<Job> =>
  until(`job ${jobId} to finish`, async () => {
    const job = await queue.getJob(jobId);
    return job?.finishedOn ? job : undefined;
  });

describe('imports through BullMQ', () => {
  let ctx: TestContext;
  let worker: Worker | undefined;
  /** Set by a test: what to do right after the given chunk (0-based) of an import commits. */
  let onChunk: { chunk: number; then: () => void } | undefined;

  beforeAll(async () => {
    ctx = await createTestContext(
      { REDIS_URL: redisUrl, QUEUE_PREFIX: prefix, IMPORT_WAIT_SECONDS: '3', WORKER_LOCK_SECONDS: '5', IMPORT_CHUNK_SIZE: '1000' },
      {
        afterChunkCommit: (n) => {
          if (onChunk?.chunk !== n) return;
          onChunk.then();
          onChunk = undefined;
        },
      },
    );
    // The producer connects in the background; imports answer 503 until it has.
    await until('the import queue to connect', () => ctx.deps.importQueue.available());
  });

  afterAll(async () => {
    await worker?.close();
    await ctx?.close();
    await removeQueueKeys(redisUrl, prefix);
  });

  it('answers 202 when the wait runs out (no worker yet), then a worker imports it and the job carries ids only', async () => {
    const company = await ctx.newCompany('Queued');
    const row = validRow();
    const res = await postImport(ctx.app, company.auth, csv([row, validRow({ claim_date: '2999-01-01' })]));
    expect(res.statusCode, res.body).toBe(202);
    const { id } = res.json().data;
    expect(res.headers.location).toBe(`/api/v1/imports/${id}`);
    expect(res.json().data.status).toBe('queued');

    const job = await (ctx.deps.importQueue as { bull: Queue }).bull.getJob(importJobId(id));
    expect(job?.data).toEqual({ importId: id });
    expect(JSON.stringify(job?.data)).not.toContain(row.id_number!);

    worker = startImportWorker(ctx.deps, ctx.config, log);
    const done = await waitForImport(ctx.app, company.auth, id);
    expect(done).toMatchObject({ status: 'completed', imported: 1, failed: 1, progress: { rows_done: 2, rows_total: 2 } });
    const finished = await finishedJob((ctx.deps.importQueue as { bull: Queue }).bull, importJobId(id));
    expect(finished?.progress).toEqual({ rows_done: 2, rows_total: 2 });
    expect(finished?.returnvalue).toMatchObject({ importId: id, imported: 1, failed: 1 });
  });

  it('waits for the job and answers 200 with the summary when a worker runs', async () => {
    worker ??= startImportWorker(ctx.deps, ctx.config, log);
    const company = await ctx.newCompany('Sync');
    const res = await postImport(ctx.app, company.auth, csv([validRow(), validRow(), validRow({ id_type: 'x' })]));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ message: 'Import finished: 2 imported, 1 failed.', imported: 2, failed: 1 });
  });

  it('returns early for a redelivered job whose import is completed (nothing written twice)', async () => {
    worker ??= startImportWorker(ctx.deps, ctx.config, log);
    const company = await ctx.newCompany('Redelivered');
    const res = await postImport(ctx.app, company.auth, csv([validRow(), validRow()]));
    expect(res.statusCode).toBe(200);
    const id = (await ctx.app.inject({ method: 'GET', url: '/api/v1/imports', headers: company.auth })).json().data[0].id;
    const queue = (ctx.deps.importQueue as { bull: Queue }).bull;
    const again = await queue.add('import-csv', { importId: id }, { jobId: `import-${id}-again` });
    const job = await finishedJob(queue, again.id!);
    expect(job?.returnvalue).toMatchObject({ alreadyDone: true, imported: 2 });
    const n = await ctx.deps.db.query<{ n: number }>('SELECT count(*)::int AS n FROM claims WHERE import_id = $1', [id]);
    expect(n[0]!.n).toBe(2);
  });

  it('fails for good without retrying when the file is gone, leaving no claims (500 with a message)', async () => {
    worker ??= startImportWorker(ctx.deps, ctx.config, log);
    await worker.pause();
    const company = await ctx.newCompany('Gone');
    const res = await postImport(ctx.app, company.auth, csv([validRow()]), { headers: { prefer: 'respond-async' } });
    const { id } = res.json().data;
    const run = (await ctx.deps.repos.imports.findById(id))!;
    await ctx.deps.storage.delete(run.objectKey);
    await worker.resume();
    const done = await waitForImport(ctx.app, company.auth, id);
    expect(done).toMatchObject({ status: 'failed', message: 'The import could not be completed; nothing was imported. Try again later.' });
    const job = await finishedJob((ctx.deps.importQueue as { bull: Queue }).bull, importJobId(id));
    expect(job?.attemptsMade).toBe(1);
    expect(await ctx.deps.repos.imports.countClaims(id)).toBe(0);
  });

  it('finishes the running import when the worker is closed gracefully (no job lost, none run twice)', async () => {
    worker ??= startImportWorker(ctx.deps, ctx.config, log);
    const company = await ctx.newCompany('Graceful');
    const rows = Array.from({ length: 3000 }, () => validRow());
    // The close is asked for from inside the import, right after the second of its three chunks
    // commits: the import is certainly running, with a chunk left, when the worker is told to close.
    const running = worker;
    let closing: Promise<void> | undefined;
    onChunk = {
      chunk: 1,
      then: () => {
        closing = running.close();
      },
    };
    const res = await postImport(ctx.app, company.auth, csv(rows), { headers: { prefer: 'respond-async' } });
    const { id } = res.json().data;
    await until('the close to be asked for mid-import', () => closing !== undefined);
    await closing;
    worker = undefined;
    // Three chunks: the last one was written after the close was asked for.
    const chunks = await ctx.deps.db.query<{ n: number }>('SELECT count(*)::int AS n FROM import_chunks WHERE import_id = $1', [id]);
    expect(chunks[0]!.n).toBe(3);
    const run = (await ctx.deps.repos.imports.findById(id))!;
    expect(run).toMatchObject({ status: 'completed', imported: 3000, failed: 0, attempts: 1 });
    expect(await ctx.deps.repos.imports.countClaims(id)).toBe(3000);
  });

  it('serves Bull Board at /admin/queues behind the sign-in: 401 signed out', async () => {
    // Who may sign in to it (operators only) is the dashboard's: test/web/bull-board.security.redis.test.ts.
    const res = await ctx.app.inject({ method: 'GET', url: '/admin/queues/api/queues', headers: { accept: 'application/json' } });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ message: 'Unauthenticated.' });
  });
});
