import fs from 'node:fs';
import path from 'node:path';

import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';

import { submitClaim } from '../harness';
import { postImport } from '../import-helpers';
import { exitOf, kill, until } from '../processes';
import { CHUNK, crashFixture, ROWS } from './crash-fixture';

/**
 * Crash safety with real processes: a worker (`dist/main-worker.mjs`, as `npm run worker` starts it)
 * is SIGKILLed at several points of a file (in the middle of a chunk, right after a chunk's commit
 * and before its progress report, after the last chunk and before completion); another one takes
 * the job over once the lock expires and goes on after the last committed chunk. The end state must
 * hold exactly the file's valid rows, each once, and an exact summary. A job that keeps dying fails
 * for good and leaves no claims. PostgreSQL restarted in the middle of an import:
 * worker-crash.pg-restart.test.ts.
 */
describe('a worker killed in the middle of an import', () => {
  const f = crashFixture();

  const committedChunks = async (id: string) =>
    (await f.ctx.deps.db.query<{ n: number }>('SELECT count(*)::int AS n FROM import_chunks WHERE import_id = $1', [id]))[0]!.n;
  const visibleToSearch = async (auth: Record<string, string>, plateRaw: string) => {
    const res = await f.ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims/search-by-plate',
      headers: auth,
      payload: { vehicle_registration: plateRaw },
    });
    return res.json().meta.total_claims as number;
  };
  const firstPlate = () => {
    const records = parse(fs.readFileSync(f.file), { relax_column_count: true, to_line: 2 });
    return records[1]![records[0]!.indexOf('vehicle_registration')]!;
  };

  it('is taken over after a kill in the middle of a chunk: the claims stay invisible meanwhile, then every valid row is stored exactly once', async () => {
    const company = await f.ctx.newCompany('Crash');
    const first = f.startWorker();
    const res = await postImport(f.ctx.app, company.auth, fs.readFileSync(f.file), { headers: { prefer: 'respond-async' } });
    expect(res.statusCode, res.body).toBe(202);
    const { id } = res.json().data;

    await f.midway(id, 1);
    await kill(first, 'SIGKILL');
    // Killed mid-way: the committed chunks' claims are stored but no read shows them.
    const stored = await f.ctx.deps.repos.imports.countClaims(id);
    expect(stored).toBeGreaterThan(0);
    expect(stored).toBeLessThan(f.expected.rows);
    expect(await visibleToSearch(company.auth, firstPlate())).toBe(0);
    const list = await f.ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: company.auth });
    expect(list.json().data).toEqual([]);

    const second = f.startWorker();
    const run = await f.expectExactlyOnce(id, 2);
    expect(run.history.map((h) => h.status)).toEqual(['queued', 'processing', 'processing', 'completed']);
    expect(await visibleToSearch(company.auth, firstPlate())).toBeGreaterThan(0);
    // Graceful stop of an idle worker.
    await kill(second, 'SIGTERM');
    expect(second.exitCode).toBe(0);
  }, 180_000);

  it('is taken over after a kill between a chunk commit and its progress report, and after the last chunk before completion', async () => {
    const lastChunk = Math.ceil(ROWS / CHUNK) - 1;
    for (const chunk of [2, lastChunk]) {
      const company = await f.ctx.newCompany(`Crash after chunk ${chunk}`);
      // Another company's claim on the file's first plate: told once per claim of the import on that plate.
      const told = await f.ctx.newCompany(`Told ${chunk}`);
      const mine = await submitClaim(f.ctx, told, { vehicle_registration: firstPlate() });
      const first = f.startWorker({ killAfterChunk: chunk });
      const res = await postImport(f.ctx.app, company.auth, fs.readFileSync(f.file), { headers: { prefer: 'respond-async' } });
      const { id } = res.json().data;
      expect(await exitOf(first)).toEqual({ code: null, signal: 'SIGKILL' });
      expect(await committedChunks(id)).toBe(chunk + 1);
      expect((await f.importRow(id))!.status).toBe('processing');
      const second = f.startWorker();
      await f.expectExactlyOnce(id, 2);
      await kill(second, 'SIGTERM');
      const [onPlate] = await f.ctx.deps.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM claims WHERE import_id = $1 AND vehicle_registration = $2',
        [id, mine.vehicle_registration],
      );
      const alerts = (await f.ctx.app.inject({ method: 'GET', url: '/api/v1/alerts?limit=100', headers: told.auth })).json().data;
      expect(onPlate!.n).toBeGreaterThan(0);
      expect(alerts).toHaveLength(onPlate!.n);
      expect(new Set(alerts.map((a: { matched_claim: { id: string } }) => a.matched_claim.id)).size).toBe(onPlate!.n);
    }
  }, 300_000);

  it('fails for good after dying again and again, leaving no claims', async () => {
    const company = await f.ctx.newCompany('Doomed');
    const res = await postImport(f.ctx.app, company.auth, fs.readFileSync(f.file), { headers: { prefer: 'respond-async' } });
    const { id } = res.json().data;
    // Each worker dies right after committing a chunk.
    for (const chunk of [1, 3]) {
      const worker = f.startWorker({ killAfterChunk: chunk });
      expect(await exitOf(worker)).toEqual({ code: null, signal: 'SIGKILL' });
    }
    const stored = path.join(f.ctx.config.dataDir, 'imports', ...(await f.importRow(id))!.objectKey.split('/'));
    expect(fs.existsSync(stored)).toBe(true);
    // BullMQ gives up on a job that stalled more than once (maxStalledCount 1).
    const worker = f.startWorker();
    const run = await f.finished(id);
    expect(run).toMatchObject({ status: 'failed', failure: 'error', imported: null });
    // The committed chunks' claims are removed in the background.
    await until("the failed import's claims to be removed", async () => (await f.ctx.deps.repos.imports.countClaims(id)) === 0);
    // Its job given up, the uploaded file is deleted too.
    await until("the failed import's file to be deleted", () => !fs.existsSync(stored));
    const res2 = await f.ctx.app.inject({ method: 'GET', url: `/api/v1/imports/${id}`, headers: company.auth });
    expect(res2.json().data).toMatchObject({
      status: 'failed',
      summary: null,
      message: 'The import could not be completed; nothing was imported. Try again later.',
    });
    await kill(worker, 'SIGTERM');
  }, 120_000);
});

/**
 * Chunks committed out of order: with IMPORT_WRITERS = 2, a worker is killed once chunks 0, 1 and
 * 3 have committed while chunk 2 is held open before its write (test/crash-worker.ts). The file
 * has no repeated persons here: a chunk that shares a person with one in flight before it waits
 * for that one to commit, so it could never commit first.
 */
describe('a worker killed with chunks committed out of order', () => {
  const f = crashFixture({ repeat: 0 });
  const chunkNumbers = async (id: string) =>
    (await f.ctx.deps.db.query<{ n: number }>('SELECT chunk_no AS n FROM import_chunks WHERE import_id = $1 ORDER BY 1', [id])).map(
      (r) => r.n,
    );

  it('writes exactly the missing chunk after a kill with chunks committed out of order (the first, second and fourth, not the third)', async () => {
    const company = await f.ctx.newCompany('Out of order');
    // Two chunks in flight: the third is held open before its write while the fourth commits, and the worker dies then.
    const first = f.startWorker({ killAfterChunk: 3, holdChunk: 2, writers: 2 });
    const res = await postImport(f.ctx.app, company.auth, fs.readFileSync(f.file), { headers: { prefer: 'respond-async' } });
    const { id } = res.json().data;
    expect(await exitOf(first)).toEqual({ code: null, signal: 'SIGKILL' });
    expect(await chunkNumbers(id)).toEqual([0, 1, 3]);
    expect((await f.importRow(id))!.rowsDone).toBe(3 * CHUNK);
    const second = f.startWorker({ writers: 2 });
    await f.expectExactlyOnce(id, 2);
    expect(await chunkNumbers(id)).toEqual(Array.from({ length: Math.ceil(ROWS / CHUNK) }, (_, i) => i));
    await kill(second, 'SIGTERM');
  }, 180_000);
});
