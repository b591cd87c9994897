import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { generateCsv } from '../../scripts/gen-csv';
import { createTestContext, dbKind, TEST_HASH_KEY, type TestContext } from '../harness';
import { postImport } from '../import-helpers';

/**
 * Crash safety with real processes: a worker (`src/main-worker.ts`, as `npm run worker` starts it)
 * is SIGKILLed in the middle of a file; another one takes the job over once the lock expires.
 * The end state must hold every valid row exactly once and an exact summary. A job that keeps
 * dying fails for good and leaves no claims. Needs PostgreSQL and Redis (CI has both).
 */
const redisUrl = process.env.TEST_REDIS_URL;
const enabled = Boolean(redisUrl) && dbKind() === 'postgres';
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const prefix = `test-crash-${randomBytes(4).toString('hex')}`;
const ROWS = 30_000;
const LOCK_SECONDS = 2;

describe.skipIf(!enabled)('a worker killed in the middle of an import', () => {
  let ctx: TestContext;
  let schema: string;
  let file: string;
  let expected: { rows: number; invalidRows: number };
  const workers = new Set<ChildProcess>();
  const logFile = path.join(root, 'test-results', `${prefix}.log`);

  /** A worker process exactly as `npm run worker` runs it (node with tsx's loader, one process to kill). */
  function startWorker(): ChildProcess {
    fs.mkdirSync(path.dirname(logFile), { recursive: true });
    const log = fs.openSync(logFile, 'a');
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main-worker.ts'], {
      cwd: root,
      stdio: ['ignore', log, log],
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        DATABASE_URL: process.env.TEST_DATABASE_URL!,
        DB_SEARCH_PATH: schema,
        DB_POOL_SIZE: '3',
        REDIS_URL: redisUrl!,
        QUEUE_PREFIX: prefix,
        DOCUMENT_HASH_KEY: TEST_HASH_KEY,
        DATA_DIR: ctx.config.dataDir,
        IMPORT_CHUNK_SIZE: '1000',
        WORKER_CONCURRENCY: '1',
        WORKER_LOCK_SECONDS: String(LOCK_SECONDS),
        LOG_LEVEL: 'info',
      },
    });
    fs.closeSync(log);
    workers.add(child);
    child.on('exit', () => workers.delete(child));
    return child;
  }

  async function kill(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    await exited;
  }

  const importRow = (id: string) => ctx.deps.store.imports.findById(id);
  async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const value = await probe();
      if (value !== undefined) return value;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  /** Waits until a worker is mid-way through the file (progress is written outside the import's transaction). */
  const midway = (id: string, attempt: number) =>
    until(`attempt ${attempt} to be mid-way`, async () => {
      const run = (await importRow(id))!;
      if (run.status === 'completed' || run.status === 'failed') throw new Error(`the import ended (${run.status}) before the worker was killed`);
      return run.attempts === attempt && run.rowsDone >= 2000 && run.rowsDone < ROWS ? run : undefined;
    });
  const finished = (id: string) =>
    until('the import to finish', async () => {
      const run = (await importRow(id))!;
      return run.status === 'completed' || run.status === 'failed' ? run : undefined;
    }, 90_000);

  beforeAll(async () => {
    ctx = await createTestContext({ REDIS_URL: redisUrl!, QUEUE_PREFIX: prefix, IMPORT_MAX_BYTES: String(20 * 1024 * 1024) });
    schema = (await ctx.deps.db.query<{ s: string }>('SELECT current_schema() AS s'))[0]!.s;
    file = path.join(ctx.config.dataDir, 'crash.csv');
    fs.mkdirSync(ctx.config.dataDir, { recursive: true });
    const out: string[] = [];
    expected = await generateCsv({ rows: ROWS, repeat: 0.3, invalid: 0.05, delimiter: ',', seed: 7 }, (chunk) => void out.push(chunk));
    fs.writeFileSync(file, out.join(''));
    for (let i = 0; i < 50 && !ctx.deps.importQueue.available(); i++) await new Promise((r) => setTimeout(r, 100));
  });

  afterAll(async () => {
    for (const child of [...workers]) await kill(child, 'SIGKILL');
    await ctx?.close();
    if (redisUrl) {
      const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    }
    fs.rmSync(logFile, { force: true });
  });

  it('is taken over by another worker: every valid row stored exactly once, the summary exact', async () => {
    const company = await ctx.newCompany('Crash');
    const first = startWorker();
    const res = await postImport(ctx.app, company.auth, fs.readFileSync(file), { headers: { prefer: 'respond-async' } });
    expect(res.statusCode, res.body).toBe(202);
    const { id } = res.json().data;

    await midway(id, 1);
    await kill(first, 'SIGKILL');
    // Killed mid-way: its transaction is rolled back, nothing of the file is visible.
    expect(await ctx.deps.store.imports.countClaims(id)).toBe(0);

    const second = startWorker();
    const run = await finished(id);
    expect(run).toMatchObject({
      status: 'completed',
      imported: expected.rows - expected.invalidRows,
      failed: expected.invalidRows,
      rowsTotal: ROWS,
      attempts: 2,
    });
    expect(run.errors).toHaveLength(expected.invalidRows);
    expect(run.errors!.map((e) => e.row)).toEqual([...run.errors!.map((e) => e.row)].sort((a, b) => a - b));
    expect(await ctx.deps.store.imports.countClaims(id)).toBe(expected.rows - expected.invalidRows);
    // Graceful stop of an idle worker.
    await kill(second, 'SIGTERM');
    expect(second.exitCode).toBe(0);
  });

  it('fails for good after dying again and again, leaving no claims', async () => {
    const company = await ctx.newCompany('Doomed');
    const res = await postImport(ctx.app, company.auth, fs.readFileSync(file), { headers: { prefer: 'respond-async' } });
    const { id } = res.json().data;
    let worker = startWorker();
    await midway(id, 1);
    await kill(worker, 'SIGKILL');
    worker = startWorker();
    await midway(id, 2);
    await kill(worker, 'SIGKILL');
    // BullMQ gives up on a job that stalled more than once (maxStalledCount 1).
    worker = startWorker();
    const run = await finished(id);
    expect(run).toMatchObject({ status: 'failed', failure: 'error', imported: null });
    expect(await ctx.deps.store.imports.countClaims(id)).toBe(0);
    const res2 = await ctx.app.inject({ method: 'GET', url: `/api/v1/imports/${id}`, headers: company.auth });
    expect(res2.json().data).toMatchObject({ status: 'failed', summary: null, message: 'The import could not be completed; nothing was imported. Try again later.' });
    await kill(worker, 'SIGTERM');
  });
});
