/**
 * CSV import benchmark on PostgreSQL (npm run bench:import):
 *
 *   npm run bench:import -- [--rows 90000] [--runs 3] [--large-mb 100] [--skip-large] [--mismatch 1000]
 *
 * 1. Upload to response: a ~9 MB file of 90,000 rows (30% repeat persons, seeded) is POSTed
 *    over real HTTP (127.0.0.1), each run on a fresh schema, to a server running imports
 *    in-process, then (with Redis) to a server that queues them for a worker process; the time
 *    from the first byte sent to the summary received is reported. Each run also times the
 *    database's own bulk path on the same rows in the same kind of fresh schema: COPY into a
 *    staging table, then INSERT..SELECT of the new clients, their documents and the claims in one
 *    transaction (persons resolved by document only, no validation); the ratio import ÷ COPY is
 *    what to compare across machines.
 * 2. Worker memory on a large file: the same kind of file at --large-mb (default 100; the goal
 *    speaks of 500) goes through the queue to a real worker process started as `npm run worker`
 *    starts it (same node flags), with IMPORT_MAX_BYTES raised; the worker's peak RSS (VmHWM)
 *    and the throughput are reported. Needs Redis; skipped without it or with --skip-large.
 *
 * With --mismatch N, instead: the cost of identity checks. The same file twice, once as generated and
 * once with N of its rows showing an earlier person's document under another date of birth (each
 * fails and is logged as an identity check), imported in-process in turn, each run on a fresh
 * schema; the medians and their ratio are reported.
 *
 * Databases: BENCH_DATABASE_URL or TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test),
 * BENCH_REDIS_URL or TEST_REDIS_URL (default redis://127.0.0.1:6379). Everything it creates
 * (schemas, files, queue keys) is removed at the end.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { Redis } from 'ioredis';
import pino from 'pino';
import postgres from 'postgres';

import { generateCsvFile } from '../scripts/gen-csv';
import { copyRows } from './copy-rows';
import { buildApp } from '../src/app';
import { loadConfig } from '../src/config';
import { openDb } from '../src/db/db';
import { openDeps } from '../src/startup';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dbUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const redisUrl = process.env.BENCH_REDIS_URL ?? process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const HASH_KEY = 'bench-document-hash-key-0123456789abcdef';
const SESSION_SECRET = 'bench-session-secret-0123456789abcdef0123';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '90000' },
    runs: { type: 'string', default: '3' },
    'large-mb': { type: 'string', default: '100' },
    'skip-large': { type: 'boolean', default: false },
    mismatch: { type: 'string' },
  },
});
const ROWS = Number(values.rows);
const RUNS = Number(values.runs);
const LARGE_MB = Number(values['large-mb']);

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'import-bench-'));

/** The worker exactly as `npm run worker` starts it (its node flags, such as the heap cap), as one process. */
function workerArgs(): string[] {
  const script = (JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts
    .worker!;
  const parts = script.replace(/^exec\s+/u, '').split(/\s+/u);
  return parts[0] === 'node' ? parts.slice(1) : ['--import', 'tsx', 'src/main-worker.ts'];
}

function startWorker(env: Record<string, string>) {
  return spawn(process.execPath, workerArgs(), {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: dbUrl,
      REDIS_URL: redisUrl,
      DOCUMENT_HASH_KEY: HASH_KEY,
      WORKER_CONCURRENCY: '1',
      LOG_LEVEL: 'warn',
      ...(process.env.WORKER_NODE_OPTIONS ? { NODE_OPTIONS: process.env.WORKER_NODE_OPTIONS } : {}),
      ...env,
    },
  });
}

async function redisReachable(): Promise<boolean> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1, lazyConnect: true });
  try {
    await redis.connect();
    return true;
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}

async function dropKeys(prefix: string) {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

/** Peak resident memory of a process (Linux), in bytes. */
function peakRss(pid: number | 'self'): number {
  const m = /VmHWM:\s+(\d+) kB/u.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

async function withSchema<T>(fn: (schema: string) => Promise<T>): Promise<T> {
  const schema = `bench_${randomBytes(5).toString('hex')}`;
  const admin = await openDb({ kind: 'postgres', url: dbUrl, poolSize: 1 });
  await admin.exec(`CREATE SCHEMA ${schema}`);
  try {
    return await fn(schema);
  } finally {
    await admin.exec(`DROP SCHEMA ${schema} CASCADE`);
    await admin.close();
  }
}

async function server(env: Record<string, string>) {
  const config = loadConfig({
    DATABASE_URL: dbUrl,
    DOCUMENT_HASH_KEY: HASH_KEY,
    SESSION_SECRET,
    DATA_DIR: path.join(work, 'data'),
    LOG_LEVEL: 'warn',
    IMPORT_WAIT_SECONDS: '3600',
    ...env,
  });
  const logger = pino({ level: 'warn' });
  const deps = await openDeps(config, { logger });
  if (!config.redisUrl) deps.startJobRunners();
  const app = await buildApp(deps, { logger });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address() as { port: number };
  const company = await deps.companies.createCompany(`Bench ${randomBytes(3).toString('hex')}`);
  const { token } = await deps.tokens.create(company.id, 'bench');
  return {
    config,
    deps,
    url: `http://127.0.0.1:${address.port}`,
    auth: { authorization: `Bearer ${token}` },
    async close() {
      await app.close();
      await deps.close();
    },
  };
}

/** The database's bulk path for the same file (copyRows), in one transaction on a fresh schema. Milliseconds. */
async function copyBaseline(file: string): Promise<number> {
  return withSchema(async (schema) => {
    // The project's tables, migrated as the service does.
    const s = await server({ DB_SEARCH_PATH: schema });
    const companyId = (await s.deps.db.query<{ id: string }>('SELECT id FROM companies LIMIT 1'))[0]!.id;
    await s.close();
    const sql = postgres(dbUrl, { max: 1, onnotice: () => {}, connection: { search_path: schema } });
    try {
      const started = performance.now();
      await sql.begin((tx) => copyRows(tx, file, companyId));
      return performance.now() - started;
    } finally {
      await sql.end({ timeout: 5 });
    }
  });
}

/** POSTs the file as multipart, streamed from disk (fs.openAsBlob), and returns the parsed answer. */
async function upload(url: string, auth: Record<string, string>, file: string, headers: Record<string, string> = {}) {
  const form = new FormData();
  form.append('file', await fs.openAsBlob(file), path.basename(file));
  const res = await fetch(`${url}/api/v1/claims/import`, { method: 'POST', headers: { ...auth, ...headers }, body: form });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function uploadToResponse() {
  const file = path.join(work, 'bench.csv');
  const stats = await generateCsvFile(file, { rows: ROWS, repeat: 0.3, invalid: 0, delimiter: ',', seed: 90_000 });
  console.log(
    `\n1) upload to response: ${stats.rows} rows, ${mb(stats.bytes)} MB, ${stats.repeatRows} repeat-person rows; a fresh schema per run`,
  );
  const queued = await redisReachable();
  const copies: number[] = [];
  for (let run = 1; run <= RUNS; run++) {
    const ms = await copyBaseline(file);
    copies.push(ms);
    console.log(`   COPY (the database's bulk path) run ${run}: ${(ms / 1000).toFixed(2)} s`);
  }
  console.log(`   COPY: median ${(median(copies) / 1000).toFixed(2)} s over ${RUNS} runs`);
  for (const mode of queued ? (['in-process', 'queue'] as const) : (['in-process'] as const)) {
    const times: number[] = [];
    for (let run = 1; run <= RUNS; run++) {
      await withSchema(async (schema) => {
        const prefix = `bench-${randomBytes(4).toString('hex')}`;
        const env = { DB_SEARCH_PATH: schema, IMPORT_MAX_BYTES: String(64 * 1024 * 1024) };
        const s = await server(mode === 'queue' ? { ...env, REDIS_URL: redisUrl, QUEUE_PREFIX: prefix } : env);
        const worker =
          mode === 'queue' ? startWorker({ DB_SEARCH_PATH: schema, QUEUE_PREFIX: prefix, DATA_DIR: s.config.dataDir }) : undefined;
        try {
          if (worker) await new Promise((r) => setTimeout(r, 3000)); // let the worker start
          const started = performance.now();
          const res = await upload(s.url, s.auth, file);
          const ms = performance.now() - started;
          times.push(ms);
          console.log(
            `   ${mode} run ${run}: ${(ms / 1000).toFixed(2)} s, HTTP ${res.status}, ${String(res.body.message)} (${Math.round(stats.rows / (ms / 1000))} rows/s)`,
          );
        } finally {
          if (worker) {
            worker.kill('SIGTERM');
            await new Promise((r) => worker.once('exit', r));
            await dropKeys(prefix);
          }
          await s.close();
        }
      });
    }
    console.log(
      `   ${mode}: median ${(median(times) / 1000).toFixed(2)} s over ${RUNS} runs, ${(median(times) / median(copies)).toFixed(2)}× the COPY`,
    );
  }
  console.log(`   this (API) process's peak RSS ${mb(peakRss('self'))} MB`);
}

/** The same import with and without `mismatches` identity-mismatching rows, in turn, in-process. */
async function mismatchCost(mismatches: number) {
  const files = { plain: path.join(work, 'plain.csv'), mismatching: path.join(work, 'mismatching.csv') };
  await generateCsvFile(files.plain, { rows: ROWS, repeat: 0.3, invalid: 0, delimiter: ',', seed: 90_000 });
  const stats = await generateCsvFile(files.mismatching, {
    rows: ROWS,
    repeat: 0.3,
    invalid: 0,
    delimiter: ',',
    seed: 90_000,
    mismatch: mismatches,
  });
  console.log(
    `\nidentity checks: ${stats.rows} rows, ${stats.mismatchRows} of them mismatching in the second file; in-process, a fresh schema per run`,
  );
  const times = { plain: [] as number[], mismatching: [] as number[] };
  for (let run = 1; run <= RUNS; run++) {
    for (const kind of ['plain', 'mismatching'] as const) {
      await withSchema(async (schema) => {
        // The hourly budget of mismatches out of reach, as the team's bench sets every abuse limit.
        const s = await server({
          DB_SEARCH_PATH: schema,
          IMPORT_MAX_BYTES: String(64 * 1024 * 1024),
          IDENTITY_MISMATCHES_PER_HOUR: '1000000000',
        });
        try {
          const started = performance.now();
          const res = await upload(s.url, s.auth, files[kind]);
          const ms = performance.now() - started;
          times[kind].push(ms);
          console.log(`   ${kind} run ${run}: ${(ms / 1000).toFixed(2)} s, HTTP ${res.status}, ${String(res.body.message)}`);
        } finally {
          await s.close();
        }
      });
    }
  }
  console.log(
    `   medians: ${(median(times.plain) / 1000).toFixed(2)} s without, ${(median(times.mismatching) / 1000).toFixed(2)} s with; ${(median(times.mismatching) / median(times.plain)).toFixed(3)}×`,
  );
}

async function largeFileWorkerMemory() {
  if (!(await redisReachable())) {
    console.log(`\n2) skipped: no Redis at ${redisUrl}`);
    return;
  }
  const prefix = `bench-${randomBytes(4).toString('hex')}`;
  const rows = Math.round((LARGE_MB * 1024 * 1024) / 100);
  const file = path.join(work, 'large.csv');
  const stats = await generateCsvFile(file, { rows, repeat: 0.3, invalid: 0.01, delimiter: ',', seed: 500 });
  console.log(
    `\n2) worker memory: ${stats.rows} rows, ${mb(stats.bytes)} MB through the queue to a worker process (node ${workerArgs().join(' ')})`,
  );
  const maxBytes = String(stats.bytes + 1024 * 1024);
  try {
    await withSchema(async (schema) => {
      const s = await server({
        DB_SEARCH_PATH: schema,
        REDIS_URL: redisUrl,
        QUEUE_PREFIX: prefix,
        IMPORT_MAX_BYTES: maxBytes,
        IMPORT_UPLOAD_TIMEOUT_SECONDS: '3600',
      });
      const worker = startWorker({ DB_SEARCH_PATH: schema, QUEUE_PREFIX: prefix, DATA_DIR: s.config.dataDir, IMPORT_MAX_BYTES: maxBytes });
      try {
        const started = performance.now();
        const res = await upload(s.url, s.auth, file, { prefer: 'respond-async' });
        const uploaded = performance.now();
        const id = (res.body.data as { id: string }).id;
        let status = 'queued';
        let sampled = 0;
        while (status === 'queued' || status === 'processing') {
          await new Promise((r) => setTimeout(r, 500));
          sampled = Math.max(sampled, peakRss(worker.pid!));
          status = (await s.deps.repos.imports.findById(id))!.status;
        }
        const run = (await s.deps.repos.imports.findById(id))!;
        const seconds = (performance.now() - started) / 1000;
        console.log(
          `   upload ${((uploaded - started) / 1000).toFixed(1)} s; import ${run.status} after ${seconds.toFixed(1)} s: ` +
            `${run.imported} imported, ${run.failed} failed (${Math.round(stats.rows / seconds)} rows/s)`,
        );
        console.log(`   worker peak RSS (VmHWM): ${mb(Math.max(sampled, peakRss(worker.pid!)))} MB`);
      } finally {
        worker.kill('SIGTERM');
        await new Promise((r) => worker.once('exit', r));
        await s.close();
      }
    });
  } finally {
    await dropKeys(prefix);
  }
}

try {
  console.log(`CSV import benchmark: ${os.cpus().length} cores, Node ${process.version}, PostgreSQL at ${new URL(dbUrl).host}`);
  if (values.mismatch !== undefined) await mismatchCost(Number(values.mismatch));
  else {
    await uploadToResponse();
    if (!values['skip-large']) await largeFileWorkerMemory();
  }
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}
