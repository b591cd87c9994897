import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, expect } from 'vitest';

import { generateCsv } from '../../scripts/gen-csv';
import { normalizePlate } from '../../src/domain/claims/claim';
import { createTestContext, TEST_HASH_KEY, type TestContext } from '../harness';
import { killAll, removeQueueKeys, ROOT, startScript, until, type Child } from '../processes';

/**
 * What the crash tests (worker-crash.redis.test.ts, worker-crash.pg-restart.test.ts) share: a
 * server context on PostgreSQL with BullMQ, a 30,000-row file with repeated persons and invalid
 * rows, worker processes as `npm run worker` starts them, and the end-state check: the import
 * completed with the exact summary, and exactly the file's valid rows stored, each once.
 * Registers its own beforeAll/afterAll; call it at the top of a describe.
 */
export const ROWS = 30_000;
export const CHUNK = 1000;
const LOCK_SECONDS = 2;
/** The crash tests' worker entry: `npm run worker` that SIGKILLs itself after a given chunk's commit. */
const CRASH_WORKER = 'test/crash-worker.ts';

export function crashFixture(opts: { repeat?: number; attempts?: number } = {}) {
  const redisUrl = process.env.TEST_REDIS_URL!;
  const prefix = `test-crash-${randomBytes(4).toString('hex')}`;
  const logFile = path.join(ROOT, 'test-results', `${prefix}.log`);
  const state = {} as { ctx: TestContext; schema: string; file: string; expected: { rows: number; invalidRows: number } };

  beforeAll(async () => {
    state.ctx = await createTestContext({
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: prefix,
      IMPORT_MAX_BYTES: String(20 * 1024 * 1024),
      ...(opts.attempts === undefined ? {} : { IMPORT_ATTEMPTS: String(opts.attempts) }),
    });
    state.schema = (await state.ctx.deps.db.query<{ s: string }>('SELECT current_schema() AS s'))[0]!.s;
    state.file = path.join(state.ctx.config.dataDir, 'crash.csv');
    fs.mkdirSync(state.ctx.config.dataDir, { recursive: true });
    const out: string[] = [];
    state.expected = await generateCsv(
      { rows: ROWS, repeat: opts.repeat ?? 0.3, invalid: 0.05, delimiter: ',', seed: 7 },
      (chunk) => void out.push(chunk),
    );
    fs.writeFileSync(state.file, out.join(''));
    await until('the import queue to connect', () => state.ctx.deps.importQueue.available());
  });

  afterAll(async () => {
    await killAll();
    await state.ctx?.close();
    await removeQueueKeys(redisUrl, prefix);
    if (!process.env.KEEP_WORKER_LOG) fs.rmSync(logFile, { force: true });
  });

  /**
   * A worker process as `npm run worker` runs it; with `killAfterChunk` (and `holdChunk`: that chunk
   * kept open before its write until the kill), test/crash-worker.ts instead. `writers`:
   * IMPORT_WRITERS, by default 1 when only `killAfterChunk` is given (the chunks before it are
   * then exactly the committed ones), else the default.
   */
  function startWorker(opts: { killAfterChunk?: number; holdChunk?: number; writers?: number } = {}): Child {
    const writers = opts.writers ?? (opts.killAfterChunk !== undefined && opts.holdChunk === undefined ? 1 : undefined);
    const crashArgs = [String(opts.killAfterChunk), ...(opts.holdChunk === undefined ? [] : [String(opts.holdChunk)])];
    return startScript(
      'worker',
      {
        DATABASE_URL: process.env.TEST_DATABASE_URL!,
        DB_SEARCH_PATH: state.schema,
        DB_POOL_SIZE: '3',
        REDIS_URL: redisUrl,
        QUEUE_PREFIX: prefix,
        DOCUMENT_HASH_KEY: TEST_HASH_KEY,
        DATA_DIR: state.ctx.config.dataDir,
        IMPORT_CHUNK_SIZE: String(CHUNK),
        WORKER_CONCURRENCY: '1',
        ...(writers === undefined ? {} : { IMPORT_WRITERS: String(writers) }),
        WORKER_LOCK_SECONDS: String(LOCK_SECONDS),
        LOG_LEVEL: 'info',
      },
      {
        logFile,
        ...(opts.killAfterChunk === undefined ? {} : { entry: CRASH_WORKER, entryArgs: crashArgs }),
      },
    );
  }

  const importRow = (id: string) => state.ctx.deps.repos.imports.findById(id);

  /** Waits until a worker is mid-way through the file (progress is written outside the import's transaction). */
  const midway = (id: string, attempt: number) =>
    until(`attempt ${attempt} to be mid-way`, async () => {
      const run = (await importRow(id))!;
      if (run.status === 'completed' || run.status === 'failed')
        throw new Error(`the import ended (${run.status}) before the worker was killed`);
      return run.attempts === attempt && run.rowsDone >= 2000 && run.rowsDone < ROWS ? run : undefined;
    });

  const finished = (id: string) =>
    until(
      'the import to finish',
      async () => {
        // A query may fail while PostgreSQL restarts: ask again.
        const run = await importRow(id).catch(() => undefined);
        return run && (run.status === 'completed' || run.status === 'failed') ? run : undefined;
      },
      120_000,
    );

  /** A claim as a comparable key: plate, date, type, amount, status. */
  const keyOf = (plateRaw: string, date: string, type: string, amount: string, status: string) =>
    [normalizePlate(plateRaw), date, type, amount === '' ? '' : Number(amount).toFixed(2), status === '' ? 'filed' : status].join('|');

  /** The claims the file's valid rows must give, each once (sorted keys), given the rows reported as failed. */
  function expectedKeys(failedRows: number[]): string[] {
    const failed = new Set(failedRows);
    const records = parse(fs.readFileSync(state.file), { relax_column_count: true });
    const [header, ...rows] = records;
    const at = (name: string) => header!.indexOf(name);
    return rows
      .map((r, i) => ({ r, row: i + 2 }))
      .filter(({ row }) => !failed.has(row))
      .map(({ r }) => keyOf(r[at('vehicle_registration')]!, r[at('claim_date')]!, r[at('claim_type')]!, r[at('amount')]!, r[at('status')]!))
      .sort();
  }

  async function storedKeys(importId: string): Promise<string[]> {
    const rows = await state.ctx.deps.db.query<{ p: string; d: string; t: string; a: string | null; s: string }>(
      'SELECT vehicle_registration AS p, claim_date AS d, claim_type AS t, amount::text AS a, status AS s FROM claims WHERE import_id = $1',
      [importId],
    );
    return rows.map((r) => keyOf(r.p, r.d, r.t ?? '', r.a ?? '', r.s)).sort();
  }

  /** The import completed with the exact summary, and exactly the valid rows stored, each once. */
  async function expectExactlyOnce(id: string, attempts: number) {
    const run = await finished(id);
    expect(run).toMatchObject({
      status: 'completed',
      imported: state.expected.rows - state.expected.invalidRows,
      failed: state.expected.invalidRows,
      rowsTotal: ROWS,
      rowsDone: ROWS,
    });
    expect(run.attempts).toBeGreaterThanOrEqual(attempts);
    expect(run.errors).toHaveLength(state.expected.invalidRows);
    const rows = run.errors!.map((e) => e.row);
    expect(rows).toEqual([...rows].sort((a, b) => a - b));
    expect(new Set(rows).size).toBe(rows.length);
    expect(await storedKeys(id)).toEqual(expectedKeys(rows));
    return run;
  }

  return {
    /** The workers' log (JSON lines) and their queue prefix. */
    logFile,
    prefix,
    get ctx() {
      return state.ctx;
    },
    get file() {
      return state.file;
    },
    get expected() {
      return state.expected;
    },
    startWorker,
    importRow,
    midway,
    finished,
    expectExactlyOnce,
  };
}
