import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { importMessages } from '../../src/domain/imports/import-messages';
import { batchMessages } from '../../src/domain/lookups/lookup-batch';
import { createTestContext, type Company, type TestContext } from '../harness';
import { csv, postImport, postLookupBatch, validRow, waitForImport } from '../import-helpers';
import { until } from '../processes';
import { startS3 } from '../s3rver';

/**
 * The object store (s3rver, over real HTTP) goes away while imports and batch look-ups wait to
 * read their files, and comes back: the jobs wait it out, counting none of their attempts
 * (IMPORT_ATTEMPTS is 1 here: one counted failure would fail the import for good), say meanwhile
 * that they wait for storage, and then finish exactly; longer than STORAGE_RETRY_SECONDS, the
 * import fails saying why, leaves no claim, and its file goes once the store is back. Imports run
 * in the server (no Redis); the same with a worker and a download cut mid-way:
 * storage-outage.redis.test.ts.
 */
let s3: Awaited<ReturnType<typeof startS3>>;
beforeAll(async () => {
  s3 = await startS3();
});
afterAll(async () => s3?.close());

/**
 * A context whose first chunk of an import can be held (the import running, the one after it
 * queued behind it: WORKER_CONCURRENCY 1) until the test lets it go.
 */
function outageContext(env: Record<string, string>) {
  const state = {} as { ctx: TestContext; bucket: string; release?: () => void; held?: Promise<void>; holding?: boolean };
  beforeAll(async () => {
    state.bucket = `outage-${randomBytes(3).toString('hex')}`;
    state.ctx = await createTestContext(
      { ...s3.env(state.bucket), IMPORT_ATTEMPTS: '1', WORKER_CONCURRENCY: '1', IMPORT_CHUNK_SIZE: '50', ...env },
      {
        beforeChunkWrite: (n) => {
          if (n !== 0 || !state.held) return Promise.resolve();
          state.holding = true;
          return state.held;
        },
      },
    );
  });
  afterAll(async () => {
    // A test that failed while the store was down leaves no job waiting for it.
    if (!s3.running) await s3.start();
    await state.ctx?.close();
  });
  return state;
}

/**
 * Imports `second` while `first` is held at its first chunk, then stops the store once the second
 * file is stored, and lets the first go: the second opens its file while the store is down.
 */
async function secondImportDuringOutage(state: ReturnType<typeof outageContext>, company: Company, second: string) {
  const { ctx } = state;
  // The token is verified now, not while the embedded database's one session is held.
  await ctx.app.inject({ method: 'GET', url: '/api/v1/imports', headers: company.auth });
  state.held = new Promise<void>((resolve) => (state.release = resolve));
  state.holding = false;
  const first = await postImport(ctx.app, company.auth, csv([validRow(), validRow()]), { headers: { prefer: 'respond-async' } });
  expect(first.statusCode, first.body).toBe(202);
  // The first has read its file and is held at its first chunk: the store's outage is not its.
  await until('the first import to be held at its first chunk', () => state.holding);
  const pending = postImport(ctx.app, company.auth, second, { headers: { prefer: 'respond-async' } });
  await until('both files to be stored', async () => (await s3.objects(state.bucket)).length === 2);
  await s3.stop();
  state.held = undefined;
  state.release!();
  const res = await pending;
  expect(res.statusCode, res.body).toBe(202);
  return { first: first.json().data.id as string, second: res.json().data.id as string };
}

const importOf = (ctx: TestContext, company: Company, id: string) =>
  ctx.app.inject({ method: 'GET', url: `/api/v1/imports/${id}`, headers: company.auth }).then((r) => r.json().data);

describe('an outage of the object store shorter than STORAGE_RETRY_SECONDS', () => {
  const state = outageContext({ STORAGE_RETRY_SECONDS: '60' });

  it('is waited out by the import (no attempt counted), whose message says so meanwhile; then it completes exactly and its file goes', async () => {
    const { ctx } = state;
    const company = await ctx.newCompany('Outage');
    const rows = Array.from({ length: 300 }, () => validRow());
    const ids = await secondImportDuringOutage(state, company, csv([...rows, validRow({ claim_date: '2999-01-01' })]));
    const waiting = await until('the import to say it waits for storage', async () => {
      const data = await importOf(ctx, company, ids.second);
      return data.message === importMessages.waitingForStorage ? data : undefined;
    });
    expect(waiting.status).toBe('processing');
    // The rejected rows' file comes from the database: it is served while the store is down.
    const errorsCsv = await ctx.app.inject({ method: 'GET', url: `/api/v1/imports/${ids.first}/errors.csv`, headers: company.auth });
    expect(errorsCsv.statusCode).toBe(200);
    // A new upload meanwhile: 503 at once, named as the store's, with Retry-After.
    const refused = await postImport(ctx.app, company.auth, csv([validRow()]));
    expect(refused.statusCode).toBe(503);
    expect(refused.headers['retry-after']).toBe('5');
    expect(refused.json()).toMatchObject({ code: 'storage_unavailable', message: expect.stringContaining('file storage') });
    expect(refused.json().message).not.toContain('database');

    await new Promise((resolve) => setTimeout(resolve, 3000));
    await s3.start();
    const done = await waitForImport(ctx.app, company.auth, ids.second, 60_000);
    expect(done).toMatchObject({ status: 'completed', imported: 300, failed: 1, message: 'Import finished: 300 imported, 1 failed.' });
    expect((await ctx.deps.repos.imports.findById(ids.second))!.attempts).toBe(1);
    expect(await ctx.deps.repos.imports.countClaims(ids.second)).toBe(300);
    const search = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims/search-by-plate',
      headers: company.auth,
      payload: { vehicle_registration: rows[299]!.vehicle_registration },
    });
    expect(search.json().meta.total_claims).toBe(1);
    expect(await waitForImport(ctx.app, company.auth, ids.first)).toMatchObject({ status: 'completed' });
    await until('both files to be deleted', async () => (await s3.objects(state.bucket)).length === 0);
  }, 90_000);

  it('is waited out by batch look-ups (no attempt counted), which say so meanwhile; both complete and their files go', async () => {
    const { ctx } = state;
    const company = await ctx.newCompany('Batch outage');
    await ctx.app.inject({ method: 'GET', url: '/api/v1/imports', headers: company.auth });
    const plates = (n: number) => ['vehicle_registration', ...Array.from({ length: n }, (_, i) => `BX${i}`)].join('\n') + '\n';
    const submit = async (content: string) => {
      const res = await postLookupBatch(ctx.app, company.auth, content);
      expect(res.statusCode, res.body).toBe(202);
      return res.json().data.id as string;
    };
    const batchOf = (id: string) =>
      ctx.app.inject({ method: 'GET', url: `/api/v1/lookups/batch/${id}`, headers: company.auth }).then((r) => r.json().data);
    // The first keeps the batch queue busy (one batch at a time) while the second is queued and the
    // store goes away: it has begun reading its file (its first chunk of 20 is written) by then.
    const first = await submit(plates(100_000));
    const second = await submit(plates(10));
    await until('the first batch to be under way', async () => (await batchOf(first)).rows_done > 0);
    await s3.stop();
    await until(
      'the second batch to say it waits for storage',
      async () => (await batchOf(second)).message === batchMessages.waitingForStorage,
      60_000,
    );
    await s3.start();
    await until(
      'both batches to complete',
      async () => (await batchOf(first)).status === 'completed' && (await batchOf(second)).status === 'completed',
      60_000,
    );
    expect(await batchOf(second)).toMatchObject({ status: 'completed', rows_done: 10, distinct_plates: 10, message: null });
    await until('both files to be deleted', async () => (await s3.objects(state.bucket)).length === 0);
  }, 120_000);
});

describe('an outage of the object store longer than STORAGE_RETRY_SECONDS', () => {
  const state = outageContext({ STORAGE_RETRY_SECONDS: '2' });

  it('fails the import saying why, with no claim visible, and its file is deleted once the store is back', async () => {
    const { ctx } = state;
    const company = await ctx.newCompany('Long outage');
    const rows = Array.from({ length: 120 }, () => validRow());
    const ids = await secondImportDuringOutage(state, company, csv(rows));
    const failed = await waitForImport(ctx.app, company.auth, ids.second, 30_000);
    expect(failed).toMatchObject({ status: 'failed', message: importMessages.storageOutage(2), imported: null });
    expect(await ctx.deps.repos.imports.countClaims(ids.second)).toBe(0);
    const list = await ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: company.auth });
    expect(
      list.json().data.filter((c: { vehicle_registration: string }) => c.vehicle_registration === rows[0]!.vehicle_registration),
    ).toEqual([]);
    await s3.start();
    await until("the failed import's file to be deleted", async () => (await s3.objects(state.bucket)).length === 0, 30_000);
  }, 60_000);
});
