import fs from 'node:fs';

import { Queue } from 'bullmq';
import { parse } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import { describe, expect, it } from 'vitest';

import { generateCsv } from '../../scripts/gen-csv';
import { IMPORT_QUEUE, importJobId, importRangeJobId, workerConnection } from '../../src/workers/queues';
import { postImport } from '../import-helpers';
import { exitOf, kill, until } from '../processes';
import { CHUNK, crashFixture, ROWS } from './crash-fixture';

/**
 * One file across several workers (IMPORT_SPLIT_BYTES): a file larger than the setting is cut into
 * ranges of whole chunks, each a job of its own that any worker takes; the import completes when
 * every range has. The crash fixture's 30,000-row file (30% repeated persons, 5% invalid rows) is
 * split in four ranges here. Each test checks the end state exactly: every valid row stored once,
 * the exact summary.
 */
const RANGES = 4;

describe('a file split across workers', () => {
  const f = crashFixture();
  const splitEnv = (concurrency: number, size = fs.statSync(f.file).size) => ({
    IMPORT_SPLIT_BYTES: String(Math.ceil(size / RANGES)),
    WORKER_CONCURRENCY: String(concurrency),
  });
  const log = () => (fs.existsSync(f.logFile) ? fs.readFileSync(f.logFile, 'utf8').split('\n') : []);
  /** Starts workers and waits until each has said it is ready. */
  const startWorkers = async (...opts: Parameters<typeof f.startWorker>[0][]) => {
    const before = log().filter((l) => l.includes('import worker ready')).length;
    const workers = opts.map((o) => f.startWorker(o));
    await until('the workers to be ready', () => log().filter((l) => l.includes('import worker ready')).length >= before + opts.length);
    return workers;
  };
  const queue = () => new Queue(IMPORT_QUEUE, { connection: workerConnection(process.env.TEST_REDIS_URL!), prefix: f.prefix });
  /** The worker processes (pids) that started a range of the import, as their log says. */
  const rangeWorkers = (id: string) => {
    const pids = new Set<number>();
    for (const line of log()) {
      if (!line.includes(`import-${id}-range-`) || !line.includes('import job started')) continue;
      pids.add((JSON.parse(line) as { pid: number }).pid);
    }
    return pids;
  };

  it('is imported by two workers, range by range, and the upload still waits for the whole file and answers its summary', async () => {
    const company = await f.ctx.newCompany('Split');
    const workers = await startWorkers({ env: splitEnv(1) }, { env: splitEnv(1) });
    const res = await postImport(f.ctx.app, company.auth, fs.readFileSync(f.file));
    expect(res.statusCode, res.body).toBe(200);
    const imported = f.expected.rows - f.expected.invalidRows;
    expect(res.json()).toMatchObject({ imported, failed: f.expected.invalidRows });
    const id = (await f.ctx.app.inject({ method: 'GET', url: '/api/v1/imports', headers: company.auth })).json().data[0].id as string;
    await f.expectExactlyOnce(id, 1);

    const q = queue();
    try {
      const parent = await q.getJob(importJobId(id));
      expect(parent?.data).toEqual({ importId: id, ranges: RANGES });
      for (let i = 0; i < RANGES; i++) expect(await (await q.getJob(importRangeJobId(id, i)))?.isCompleted()).toBe(true);
    } finally {
      await q.close();
    }
    expect(rangeWorkers(id).size).toBe(2);
    for (const w of workers) await kill(w, 'SIGTERM');
  }, 180_000);

  it("goes on without a range's worker killed mid-way: another worker takes its range over after its last committed chunk", async () => {
    const company = await f.ctx.newCompany('Split crash');
    // The killed worker holds two ranges at once; it dies after committing the second range's second chunk.
    const rangeChunks = Math.ceil(ROWS / CHUNK / RANGES);
    const [first] = await startWorkers({ killAfterChunk: rangeChunks + 1, env: splitEnv(2) });
    const res = await postImport(f.ctx.app, company.auth, fs.readFileSync(f.file), { headers: { prefer: 'respond-async' } });
    const { id } = res.json().data;
    expect(await exitOf(first!)).toEqual({ code: null, signal: 'SIGKILL' });
    expect((await f.importRow(id))!.status).toBe('processing');
    const second = f.startWorker({ env: splitEnv(2) });
    await f.expectExactlyOnce(id, 1);
    expect(rangeWorkers(id).size).toBe(2);
    await kill(second, 'SIGTERM');
  }, 180_000);

  it("fails the whole import when one range keeps dying: no claim of any range stays, and the upload's job fails too", async () => {
    const company = await f.ctx.newCompany('Split doomed');
    const rangeChunks = Math.ceil(ROWS / CHUNK / RANGES);
    const res = await postImport(f.ctx.app, company.auth, fs.readFileSync(f.file), { headers: { prefer: 'respond-async' } });
    const { id } = res.json().data;
    // The second range's worker dies twice, after different chunks; BullMQ gives the range up on its second stall.
    for (const chunk of [rangeChunks + 1, rangeChunks + 3]) {
      const [worker] = await startWorkers({ killAfterChunk: chunk, env: splitEnv(2) });
      expect(await exitOf(worker!)).toEqual({ code: null, signal: 'SIGKILL' });
    }
    const [worker] = await startWorkers({ env: splitEnv(2) });
    const run = await f.finished(id);
    expect(run).toMatchObject({ status: 'failed', failure: 'error', imported: null });
    await until("the failed import's claims to be removed", async () => (await f.ctx.deps.repos.imports.countClaims(id)) === 0);
    const q = queue();
    try {
      expect(await (await q.getJob(importJobId(id)))?.isFailed()).toBe(true);
    } finally {
      await q.close();
    }
    await kill(worker!, 'SIGTERM');
  }, 180_000);

  it('stops every range on a cancel: the import is cancelled and none of its claims stay', async () => {
    const company = await f.ctx.newCompany('Split cancel');
    // Chunk 0 is held 4 s: the other ranges soon wait for it (they share persons with the first range).
    const [worker] = await startWorkers({ killAfterChunk: -1, holdChunk: 0, holdMs: 4000, env: splitEnv(RANGES) });
    const res = await postImport(f.ctx.app, company.auth, fs.readFileSync(f.file), { headers: { prefer: 'respond-async' } });
    const { id } = res.json().data;
    await until('every range to have started', () => rangeWorkers(id).size === 1 && countStarts(id) >= RANGES);
    const cancel = await f.ctx.app.inject({ method: 'POST', url: `/api/v1/imports/${id}/cancel`, headers: company.auth });
    expect(cancel.statusCode, cancel.body).toBe(202);
    const run = await until('the import to be cancelled', async () => {
      const now = (await f.importRow(id))!;
      return now.status === 'processing' ? undefined : now;
    });
    expect(run.status).toBe('cancelled');
    await until("the cancelled import's claims to be removed", async () => (await f.ctx.deps.repos.imports.countClaims(id)) === 0);
    const q = queue();
    try {
      for (let i = 0; i < RANGES; i++) expect(await (await q.getJob(importRangeJobId(id, i)))?.isCompleted()).toBe(true);
    } finally {
      await q.close();
    }
    await kill(worker!, 'SIGTERM');
  }, 180_000);

  const countStarts = (id: string) => log().filter((l) => l.includes(`import-${id}-range-`) && l.includes('import job started')).length;

  it("resolves identities in file order across ranges: a later range's row with a known document and another date of birth fails, not the earlier one", async () => {
    const company = await f.ctx.newCompany('Split identity');
    // A file of valid rows and distinct persons; then the first 20 persons again in the last range,
    // each with another date of birth.
    const out: string[] = [];
    await generateCsv({ rows: ROWS, repeat: 0, invalid: 0, delimiter: ',', seed: 11 }, (chunk) => void out.push(chunk));
    const [header, ...rows]: string[][] = parse(out.join(''));
    const at = (name: string) => header!.indexOf(name);
    const later = rows.length - 500;
    const conflicts: number[] = [];
    for (let k = 0; k < 20; k++) {
      const copy = [...rows[later + k]!];
      copy[at('id_type')] = rows[k]![at('id_type')]!;
      copy[at('id_number')] = rows[k]![at('id_number')]!;
      copy[at('date_of_birth')] = rows[k]![at('date_of_birth')] === '1950-01-01' ? '1950-01-02' : '1950-01-01';
      rows[later + k] = copy;
      conflicts.push(later + k + 2);
    }
    const file = stringify([header!, ...rows]);
    // Chunk 0 is slow: without the wait across ranges, the last range would write those persons first.
    const [worker] = await startWorkers({ killAfterChunk: -1, holdChunk: 0, holdMs: 3000, env: splitEnv(RANGES, Buffer.byteLength(file)) });
    const res = await postImport(f.ctx.app, company.auth, file, { headers: { prefer: 'respond-async' } });
    const { id } = res.json().data;
    const run = await f.finished(id);
    expect(run.status).toBe('completed');
    // Exactly the later rows fail, on their date of birth; the persons' first rows are stored.
    expect(run.errors!.map((e) => ({ row: e.row, fields: Object.keys(e.messages) }))).toEqual(
      conflicts.map((row) => ({ row, fields: ['date_of_birth'] })),
    );
    expect(run).toMatchObject({ imported: ROWS - conflicts.length, failed: conflicts.length });
    await kill(worker!, 'SIGTERM');
  }, 180_000);
});
