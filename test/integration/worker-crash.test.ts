import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { parse } from 'csv-parse/sync';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { generateCsv } from '../../scripts/gen-csv';
import { normalizePlate } from '../../src/domain/claims/claim';
import { createTestContext, dbKind, submitClaim, TEST_HASH_KEY, type TestContext } from '../harness';
import { postImport } from '../import-helpers';

/**
 * Crash safety with real processes: a worker (`src/main-worker.ts`, as `npm run worker` starts it)
 * is SIGKILLed at several points of a file (in the middle of a chunk, right after a chunk's commit
 * and before its progress report, after the last chunk and before completion); another one takes
 * the job over once the lock expires and goes on after the last committed chunk. PostgreSQL is
 * restarted in the middle of an import (a BullMQ retry then resumes it). The end state must hold
 * exactly the file's valid rows, each once, and an exact summary. A job that keeps dying fails for
 * good and leaves no claims. Needs PostgreSQL and Redis (CI has both). The restart runs only with
 * TEST_PG_RESTART=1, as it cuts every connection of the cluster for a moment: .ci/run runs it on
 * its own, after the rest of the suite, so that no other test loses its connections.
 */
const redisUrl = process.env.TEST_REDIS_URL;
const enabled = Boolean(redisUrl) && dbKind() === 'postgres';
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const prefix = `test-crash-${randomBytes(4).toString('hex')}`;
const ROWS = 30_000;
const CHUNK = 1000;
const LOCK_SECONDS = 2;
const canRestartPg = process.env.TEST_PG_RESTART === '1';

describe.skipIf(!enabled)('a worker killed in the middle of an import', () => {
  let ctx: TestContext;
  let schema: string;
  let file: string;
  let expected: { rows: number; invalidRows: number };
  const workers = new Set<ChildProcess>();
  const logFile = path.join(root, 'test-results', `${prefix}.log`);

  /** A worker process exactly as `npm run worker` runs it (node with tsx's loader, one process to kill). */
  function startWorker(extraEnv: Record<string, string> = {}): ChildProcess {
    fs.mkdirSync(path.dirname(logFile), { recursive: true });
    const log = fs.openSync(logFile, 'a');
    const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', 'src/main-worker.ts'], {
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
        IMPORT_CHUNK_SIZE: String(CHUNK),
        WORKER_CONCURRENCY: '1',
        WORKER_LOCK_SECONDS: String(LOCK_SECONDS),
        LOG_LEVEL: 'info',
        ...extraEnv,
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
    const records = parse(fs.readFileSync(file), { relax_column_count: true });
    const [header, ...rows] = records;
    const at = (name: string) => header!.indexOf(name);
    return rows
      .map((r, i) => ({ r, row: i + 2 }))
      .filter(({ row }) => !failed.has(row))
      .map(({ r }) => keyOf(r[at('vehicle_registration')]!, r[at('claim_date')]!, r[at('claim_type')]!, r[at('amount')]!, r[at('status')]!))
      .sort();
  }
  async function storedKeys(importId: string): Promise<string[]> {
    const rows = await ctx.deps.db.query<{ p: string; d: string; t: string; a: string | null; s: string }>(
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
      imported: expected.rows - expected.invalidRows,
      failed: expected.invalidRows,
      rowsTotal: ROWS,
      rowsDone: ROWS,
    });
    expect(run.attempts).toBeGreaterThanOrEqual(attempts);
    expect(run.errors).toHaveLength(expected.invalidRows);
    const rows = run.errors!.map((e) => e.row);
    expect(rows).toEqual([...rows].sort((a, b) => a - b));
    expect(new Set(rows).size).toBe(rows.length);
    expect(await storedKeys(id)).toEqual(expectedKeys(rows));
    return run;
  }
  const committedChunks = async (id: string) =>
    (await ctx.deps.db.query<{ n: number }>('SELECT count(*)::int AS n FROM import_chunks WHERE import_id = $1', [id]))[0]!.n;
  const visibleToSearch = async (auth: Record<string, string>, plateRaw: string) => {
    const res = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims/search-by-plate',
      headers: auth,
      payload: { vehicle_registration: plateRaw },
    });
    return res.json().meta.total_claims as number;
  };
  const firstPlate = () => {
    const records = parse(fs.readFileSync(file), { relax_column_count: true, to_line: 2 });
    return records[1]![records[0]!.indexOf('vehicle_registration')]!;
  };

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
    if (!process.env.KEEP_WORKER_LOG) fs.rmSync(logFile, { force: true });
  });

  it('is taken over after a kill in the middle of a chunk: the claims stay invisible meanwhile, then every valid row is stored exactly once', async () => {
    const company = await ctx.newCompany('Crash');
    const first = startWorker();
    const res = await postImport(ctx.app, company.auth, fs.readFileSync(file), { headers: { prefer: 'respond-async' } });
    expect(res.statusCode, res.body).toBe(202);
    const { id } = res.json().data;

    await midway(id, 1);
    await kill(first, 'SIGKILL');
    // Killed mid-way: the committed chunks' claims are stored but no read shows them.
    const stored = await ctx.deps.store.imports.countClaims(id);
    expect(stored).toBeGreaterThan(0);
    expect(stored).toBeLessThan(expected.rows);
    expect(await visibleToSearch(company.auth, firstPlate())).toBe(0);
    const list = await ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: company.auth });
    expect(list.json().data).toEqual([]);

    const second = startWorker();
    const run = await expectExactlyOnce(id, 2);
    expect(run.history.map((h) => h.status)).toEqual(['queued', 'processing', 'processing', 'completed']);
    expect(await visibleToSearch(company.auth, firstPlate())).toBeGreaterThan(0);
    // Graceful stop of an idle worker.
    await kill(second, 'SIGTERM');
    expect(second.exitCode).toBe(0);
  }, 180_000);

  it('is taken over after a kill between a chunk commit and its progress report, and after the last chunk before completion', async () => {
    const lastChunk = Math.ceil(ROWS / CHUNK) - 1;
    for (const chunk of [2, lastChunk]) {
      const company = await ctx.newCompany(`Crash after chunk ${chunk}`);
      // Another company's claim on the file's first plate: told once per claim of the import on that plate.
      const told = await ctx.newCompany(`Told ${chunk}`);
      const mine = await submitClaim(ctx, told, { vehicle_registration: firstPlate() });
      const first = startWorker({ TEST_KILL_WORKER_AFTER_CHUNK: String(chunk) });
      const exited = new Promise<void>((resolve) => first.once('exit', () => resolve()));
      const res = await postImport(ctx.app, company.auth, fs.readFileSync(file), { headers: { prefer: 'respond-async' } });
      const { id } = res.json().data;
      await exited;
      expect(first.signalCode).toBe('SIGKILL');
      expect(await committedChunks(id)).toBe(chunk + 1);
      expect((await importRow(id))!.status).toBe('processing');
      const second = startWorker();
      await expectExactlyOnce(id, 2);
      await kill(second, 'SIGTERM');
      const [onPlate] = await ctx.deps.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM claims WHERE import_id = $1 AND vehicle_registration = $2',
        [id, mine.vehicle_registration],
      );
      const alerts = (await ctx.app.inject({ method: 'GET', url: '/api/v1/alerts?limit=100', headers: told.auth })).json().data;
      expect(onPlate!.n).toBeGreaterThan(0);
      expect(alerts).toHaveLength(onPlate!.n);
      expect(new Set(alerts.map((a: { matched_claim: { id: string } }) => a.matched_claim.id)).size).toBe(onPlate!.n);
    }
  }, 300_000);

  it.skipIf(!canRestartPg)(
    'survives a PostgreSQL restart in the middle of an import (a BullMQ retry, or a restarted worker, resumes it)',
    async () => {
      const company = await ctx.newCompany('Restart');
      // Like a process supervisor: a worker that exits is started again. The chunk that was being
      // written fails with the connection; BullMQ retries the job after its backoff. (The driver,
      // postgres 3.4.9, may also crash the process with a TypeError when its connection dies inside
      // a transaction: the restarted worker then takes the stalled job over.)
      let supervising = true;
      let worker = startWorker();
      const supervise = (child: ChildProcess) =>
        child.once('exit', () => {
          if (!supervising) return;
          worker = startWorker();
          supervise(worker);
        });
      supervise(worker);
      const res = await postImport(ctx.app, company.auth, fs.readFileSync(file), { headers: { prefer: 'respond-async' } });
      const { id } = res.json().data;
      await midway(id, 1);
      const cluster = fs.readdirSync('/etc/postgresql')[0]!;
      execFileSync('pg_ctlcluster', ['--skip-systemctl-redirect', cluster, 'main', 'restart'], { stdio: 'ignore' });
      const run = await expectExactlyOnce(id, 2);
      expect(run.history.filter((h) => h.status === 'processing').length).toBeGreaterThanOrEqual(2);
      supervising = false;
      await kill(worker, 'SIGTERM');
    },
    180_000,
  );

  it('fails for good after dying again and again, leaving no claims', async () => {
    const company = await ctx.newCompany('Doomed');
    const res = await postImport(ctx.app, company.auth, fs.readFileSync(file), { headers: { prefer: 'respond-async' } });
    const { id } = res.json().data;
    // Each worker dies right after committing a chunk.
    for (const chunk of [1, 3]) {
      const worker = startWorker({ TEST_KILL_WORKER_AFTER_CHUNK: String(chunk) });
      await new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    }
    // BullMQ gives up on a job that stalled more than once (maxStalledCount 1).
    const worker = startWorker();
    const run = await finished(id);
    expect(run).toMatchObject({ status: 'failed', failure: 'error', imported: null });
    // The committed chunks' claims are removed in the background.
    await until("the failed import's claims to be removed", async () =>
      (await ctx.deps.store.imports.countClaims(id)) === 0 ? true : undefined,
    );
    const res2 = await ctx.app.inject({ method: 'GET', url: `/api/v1/imports/${id}`, headers: company.auth });
    expect(res2.json().data).toMatchObject({
      status: 'failed',
      summary: null,
      message: 'The import could not be completed; nothing was imported. Try again later.',
    });
    await kill(worker, 'SIGTERM');
  }, 120_000);
});
