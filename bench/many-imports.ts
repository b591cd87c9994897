/**
 * Many imports at once (npm run bench:many-imports):
 *
 *   npm run bench:many-imports -- [--files 20] [--mb 10 | --rows N] [--storage folder|s3] [--concurrency 2]
 *
 * Two API processes (`npm start`) and two workers (`npm run worker`, WORKER_CONCURRENCY
 * --concurrency), started as their npm scripts start them, on PostgreSQL (BENCH_DATABASE_URL or
 * TEST_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test), Redis (BENCH_REDIS_URL or
 * TEST_REDIS_URL, default redis://127.0.0.1:6379) and a storage folder shared by the four
 * processes, or s3rver (an S3-compatible server, started here) with --storage s3.
 *
 * 1. Alone: one company uploads one generated file (--mb, about 100 bytes a row; 30% repeat
 *    persons, 1% invalid rows); the time from the first byte sent to the import's completion.
 * 2. At once: --files companies each upload a file of the same size (their own persons) at the
 *    same moment, spread over the two APIs; the time from the first byte sent to the last import's
 *    completion gives the aggregate rows/s.
 * Each phase runs on a fresh schema. Printed: both rows/s and their ratio (at once ÷ alone; the
 * goal is 0.9 or more: running many at once loses little beside running them one after the
 * other), and each import's queue wait and run time. Everything it creates (schemas, files,
 * queue keys, processes) is removed at the end.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { Redis } from 'ioredis';
import pino from 'pino';

import { generateCsv, generateCsvFile } from '../scripts/gen-csv';
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
    files: { type: 'string', default: '20' },
    mb: { type: 'string', default: '10' },
    rows: { type: 'string' },
    storage: { type: 'string', default: 'folder' },
    concurrency: { type: 'string', default: '2' },
  },
});
const FILES = Number(values.files);
const CONCURRENCY = Number(values.concurrency);
if (!Number.isInteger(FILES) || FILES < 1 || !['folder', 's3'].includes(values.storage) || !(CONCURRENCY >= 1)) {
  console.error('Usage: npm run bench:many-imports -- [--files 20] [--mb 10 | --rows N] [--storage folder|s3] [--concurrency 2]');
  process.exit(2);
}
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'many-imports-'));
const children = new Set<ChildProcess>();

/** `npm start` or `npm run worker` as the npm script runs node (its flags), as one process. */
function startScript(script: 'start' | 'worker', env: Record<string, string>): ChildProcess & { output: () => string } {
  const command = (JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts[
    script
  ]!;
  const [, ...args] = command.replace(/^exec\s+/u, '').split(/\s+/u);
  const child = spawn(process.execPath, args, {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
  });
  let out = '';
  const keep = (d: Buffer) => (out = (out + d.toString()).slice(-20_000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  children.add(child);
  child.on('exit', () => children.delete(child));
  return Object.assign(child, { output: () => out });
}

async function printed(child: ChildProcess & { output: () => string }, line: string) {
  while (!child.output().includes(line)) {
    if (child.exitCode !== null) throw new Error(`a process exited at start: ${child.output().slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function stop(child: ChildProcess) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** An S3-compatible server in this process, for --storage s3. */
async function startS3(): Promise<{ env: Record<string, string>; close: () => Promise<void> }> {
  type S3rver = { run(): Promise<{ port: number }>; close(): Promise<void> };
  const S3rverClass = createRequire(import.meta.url)('s3rver') as new (opts: Record<string, unknown>) => S3rver;
  const server = new S3rverClass({ address: '127.0.0.1', port: 0, silent: true, directory: path.join(work, 's3') });
  const { port } = await server.run();
  return {
    env: { S3_ENDPOINT: `http://127.0.0.1:${port}`, S3_ACCESS_KEY: 'S3RVER', S3_SECRET_KEY: 'S3RVER', S3_BUCKET: 'bench-imports' },
    close: () => server.close(),
  };
}

/** Rows for a file of about `mb` megabytes, from a sample of the generator's rows. */
async function rowsFor(mb: number): Promise<number> {
  const stats = await generateCsv({ rows: 2000, repeat: 0.3, invalid: 0.01, delimiter: ',', seed: 1 }, () => undefined);
  return Math.round((mb * 1024 * 1024) / (stats.bytes / stats.rows));
}

type Stack = {
  apis: string[];
  auths: { authorization: string }[];
  /** The import's status and its history's times (milliseconds). */
  status: (id: string) => Promise<{ status: string; imported: number | null; queued: string; started?: string; done?: string }>;
};

/**
 * A fresh schema (migrated as the service does, through openDeps) with `companies` companies and
 * their tokens; the two APIs and two workers on it. Runs `fn`, then removes everything.
 */
async function withStack<T>(companies: number, storageEnv: Record<string, string>, fn: (s: Stack) => Promise<T>): Promise<T> {
  const schema = `bench_${randomBytes(5).toString('hex')}`;
  const prefix = `bench-many-${randomBytes(4).toString('hex')}`;
  const admin = await openDb({ kind: 'postgres', url: dbUrl, poolSize: 1 });
  await admin.exec(`CREATE SCHEMA ${schema}`);
  const env = {
    DATABASE_URL: dbUrl,
    DB_SEARCH_PATH: schema,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: prefix,
    DOCUMENT_HASH_KEY: HASH_KEY,
    DATA_DIR: path.join(work, 'data'),
    IMPORT_MAX_BYTES: String(64 * 1024 * 1024),
    IMPORT_UPLOAD_TIMEOUT_SECONDS: '600',
    LOG_LEVEL: 'warn',
    ...storageEnv,
  };
  const deps = await openDeps(loadConfig({ ...env, SESSION_SECRET }), { logger: pino({ level: 'warn' }) });
  try {
    const auths: { authorization: string }[] = [];
    for (let i = 0; i < companies; i++) {
      const company = await deps.companies.createCompany(`Bench ${i} ${randomBytes(3).toString('hex')}`);
      auths.push({ authorization: `Bearer ${(await deps.tokens.create(company.id, 'bench')).token}` });
    }
    const apis: string[] = [];
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      const api = startScript('start', { ...env, HOST: '127.0.0.1', PORT: String(port), SESSION_SECRET, LOG_LEVEL: 'info' });
      await printed(api, 'claims registry ready');
      apis.push(`http://127.0.0.1:${port}`);
    }
    for (let i = 0; i < 2; i++) {
      const worker = startScript('worker', { ...env, WORKER_CONCURRENCY: String(CONCURRENCY), LOG_LEVEL: 'info' });
      await printed(worker, 'import worker ready');
    }
    const status = async (id: string) => {
      const run = (await deps.repos.imports.findById(id))!;
      const at = (s: string) => run.history.find((h) => h.status === s)?.at;
      return { status: run.status, imported: run.imported, queued: at('queued')!, started: at('processing'), done: at(run.status) };
    };
    return await fn({ apis, auths, status });
  } finally {
    await Promise.all([...children].map(stop));
    await deps.close();
    await admin.exec(`DROP SCHEMA ${schema} CASCADE`);
    await admin.close();
    const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  }
}

async function upload(api: string, auth: Record<string, string>, file: string): Promise<string> {
  const form = new FormData();
  form.append('file', await fs.openAsBlob(file), path.basename(file));
  const res = await fetch(`${api}/api/v1/claims/import`, { method: 'POST', headers: { ...auth, prefer: 'respond-async' }, body: form });
  const body = (await res.json()) as { data?: { id: string } };
  if (res.status !== 202 || !body.data) throw new Error(`upload answered ${res.status}: ${JSON.stringify(body)}`);
  return body.data.id;
}

/** Uploads every file at once (file i to API i mod 2) and waits for every import to end. Seconds, first byte to last completion. */
async function runAtOnce(s: Stack, files: string[]) {
  const started = performance.now();
  const ids = await Promise.all(files.map((f, i) => upload(s.apis[i % 2]!, s.auths[i]!, f)));
  for (;;) {
    const runs = await Promise.all(ids.map(s.status));
    if (runs.every((r) => !['queued', 'processing'].includes(r.status))) return { seconds: (performance.now() - started) / 1000, runs };
    await new Promise((r) => setTimeout(r, 200));
  }
}

const ms = (from: string | undefined, to: string | undefined) => (from && to ? Date.parse(to) - Date.parse(from) : NaN);
const range = (xs: number[]) => `${(Math.min(...xs) / 1000).toFixed(1)}–${(Math.max(...xs) / 1000).toFixed(1)} s`;

try {
  const rows = values.rows ? Number(values.rows) : await rowsFor(Number(values.mb));
  const s3 = values.storage === 's3' ? await startS3() : undefined;
  console.log(
    `Many imports: ${os.cpus().length} cores, Node ${process.version}, PostgreSQL at ${new URL(dbUrl).host}, ` +
      `storage ${values.storage}; 2 APIs, 2 workers × WORKER_CONCURRENCY ${CONCURRENCY}`,
  );
  const files: string[] = [];
  let bytes = 0;
  for (let i = 0; i < FILES; i++) {
    files.push(path.join(work, `company-${i}.csv`));
    bytes += (await generateCsvFile(files[i]!, { rows, repeat: 0.3, invalid: 0.01, delimiter: ',', seed: 1000 + i })).bytes;
  }
  console.log(`${FILES} files of ${rows} rows (${(bytes / FILES / 1024 / 1024).toFixed(1)} MB each), each company's own persons`);
  try {
    const alone = await withStack(1, s3?.env ?? {}, (s) => runAtOnce(s, files.slice(0, 1)));
    const aloneRate = rows / alone.seconds;
    console.log(`1) alone:   1 import,  ${alone.seconds.toFixed(1)} s, ${Math.round(aloneRate)} rows/s (${alone.runs[0]!.status})`);
    const many = await withStack(FILES, s3?.env ?? {}, (s) => runAtOnce(s, files));
    const manyRate = (rows * FILES) / many.seconds;
    const completed = many.runs.filter((r) => r.status === 'completed' && r.imported !== null).length;
    console.log(
      `2) at once: ${FILES} imports, ${many.seconds.toFixed(1)} s, ${Math.round(manyRate)} rows/s aggregate (${completed}/${FILES} completed)`,
    );
    console.log(
      `   queue wait ${range(many.runs.map((r) => ms(r.queued, r.started)))}, run ${range(many.runs.map((r) => ms(r.started, r.done)))}`,
    );
    console.log(`   ratio at once ÷ alone: ${(manyRate / aloneRate).toFixed(2)}× (goal ≥ 0.9×)`);
  } finally {
    await s3?.close();
  }
} finally {
  await Promise.all([...children].map(stop));
  fs.rmSync(work, { recursive: true, force: true });
}
