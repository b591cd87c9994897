import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';

import { generateCsv } from '../../scripts/gen-csv';
import { DatabaseLockedError, openDb } from '../../src/db/db';
import { createTestContext, dbKind, TEST_HASH_KEY, type TestContext } from '../harness';
import { csv, multipart, postImport, validRow } from '../import-helpers';

/**
 * The processes as the container and `npm start` / `npm run worker` start them (the command of
 * the npm script, which the Dockerfile and docker-compose.yml use too): SIGTERM lets in-flight
 * requests and running imports finish, then the process exits 0. A server killed with SIGKILL
 * leaves its embedded database's lock behind; the next start takes it at once.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const scripts = (JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
const children = new Set<ChildProcess>();

function startScript(script: 'start' | 'worker', env: Record<string, string>): ChildProcess & { output: () => string } {
  const [cmd, ...args] = scripts[script]!.replace(/^exec\s+/u, '').split(/\s+/u);
  expect(cmd).toBe('node');
  const child = spawn(process.execPath, args, {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', LOG_LEVEL: 'info', HOST: '127.0.0.1', ...env },
  }) as ChildProcess & { output: () => string };
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  child.output = () => out;
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
const exitOf = (child: ChildProcess) =>
  new Promise<{ code: number | null; signal: string | null }>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve({ code: child.exitCode, signal: child.signalCode });
    else child.once('exit', (code, signal) => resolve({ code, signal }));
  });
const ready = (child: ChildProcess & { output: () => string }, line: string) =>
  until(`"${line}" (output so far: ${child.output().slice(-500)})`, () => {
    if (child.exitCode !== null) throw new Error(`exited early: ${child.output()}`);
    return child.output().includes(line) || undefined;
  });
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

afterEach(async () => {
  for (const child of [...children]) {
    child.kill('SIGKILL');
    await exitOf(child);
  }
});

describe.skipIf(dbKind() !== 'pglite')('the embedded database after a SIGKILL', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'claims-stop-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('is refused while its holder lives, and taken at once when the holder was killed', async () => {
    const port = await freePort();
    const server = startScript('start', { DATA_DIR: dir, PORT: String(port) });
    await ready(server, 'claims registry ready');
    const pgdata = path.join(dir, 'pgdata');
    await expect(openDb({ kind: 'pglite', dataDir: pgdata })).rejects.toBeInstanceOf(DatabaseLockedError);

    server.kill('SIGKILL');
    await exitOf(server);
    const db = await openDb({ kind: 'pglite', dataDir: pgdata });
    try {
      expect((await db.query<{ n: number }>('SELECT count(*)::int AS n FROM companies'))[0]!.n).toBe(0);
    } finally {
      await db.close();
    }
  }, 120_000);
});

describe.skipIf(dbKind() !== 'postgres')('npm start on PostgreSQL without REDIS_URL', () => {
  let ctx: TestContext;
  afterAll(async () => ctx?.close());

  /** `npm start` on this test's PostgreSQL schema, ready to answer on `port`. */
  async function startServer(env: Record<string, string> = {}) {
    ctx ??= await createTestContext();
    const schema = (await ctx.deps.db.query<{ s: string }>('SELECT current_schema() AS s'))[0]!.s;
    const port = await freePort();
    const server = startScript('start', {
      DATABASE_URL: process.env.TEST_DATABASE_URL!,
      DB_SEARCH_PATH: schema,
      DB_POOL_SIZE: '3',
      DOCUMENT_HASH_KEY: TEST_HASH_KEY,
      SESSION_SECRET: 'test-session-secret-0123456789abcdef0123',
      DATA_DIR: ctx.config.dataDir,
      PORT: String(port),
      ...env,
    });
    await ready(server, 'claims registry ready');
    return { server, port };
  }

  it('runs imports on its import thread: the summary, the stored claims, the metrics', async () => {
    const metricsPort = await freePort();
    const { server, port } = await startServer({ METRICS_PORT: String(metricsPort) });
    await ready(server, 'import thread ready');
    const company = await ctx.newCompany('Thread');
    const rows = [validRow(), validRow(), validRow({ amount: 'lots' })];
    const body = await multipart(csv(rows));
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/claims/import`, {
      method: 'POST',
      headers: { ...company.auth, 'content-type': body.contentType },
      body: body.payload,
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ imported: 2, failed: 1, errors: [{ row: 4, messages: { amount: [expect.any(String)] } }] });
    const list = await fetch(`http://127.0.0.1:${port}/api/v1/claims`, { headers: company.auth });
    const plates = ((await list.json()) as { data: { vehicle_registration: string }[] }).data.map((c) => c.vehicle_registration);
    expect(plates.sort()).toEqual([rows[0]!.vehicle_registration, rows[1]!.vehicle_registration].sort());
    // The thread's observations reach the server's /metrics.
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(metrics).toMatch(/^claims_import_rows_processed_total 3$/mu);
    expect(metrics).toMatch(/^claims_import_rows_failed_total 1$/mu);
  }, 120_000);

  it('fails an import whose file is gone for good, at once, without retrying it', async () => {
    ctx ??= await createTestContext();
    const company = await ctx.newCompany('Gone');
    // A queued import whose file is not in storage, left behind as by a stopped server: the next start takes it up.
    const id = randomUUID();
    await ctx.deps.db.query(`INSERT INTO imports (id, company_id, file_name, object_key, size_bytes) VALUES ($1, $2, 'gone.csv', $3, 10)`, [
      id,
      company.id,
      `imports/${company.id}/${id}`,
    ]);
    const { server, port } = await startServer();
    const done = await until('the import to fail', async () => {
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/imports/${id}`, { headers: company.auth });
      const { data } = (await res.json()) as { data: { status: string; message: string | null } };
      return data.status === 'failed' ? data : undefined;
    });
    expect(done.message).toBe('The import could not be completed; nothing was imported. Try again later.');
    await ready(server, 'import stopped');
    expect(server.output()).not.toContain('retrying');
  }, 120_000);

  it('finishes the upload in flight and its import, answers it, then exits 0', async () => {
    const { server, port } = await startServer();
    const company = await ctx.newCompany('Stop');

    const body = await multipart(csv([validRow(), validRow()]));
    const half = Math.floor(body.payload.length / 2);
    let sentHalf!: () => void;
    const halfSent = new Promise<void>((r) => (sentHalf = r));
    const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/api/v1/claims/import',
          headers: { ...company.auth, 'content-type': body.contentType, 'content-length': body.payload.length },
        },
        (res) => {
          let text = '';
          res.on('data', (d: Buffer) => (text += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, text }));
        },
      );
      req.on('error', reject);
      req.write(body.payload.subarray(0, half), () => sentHalf());
      halfSent
        .then(() => until('the shutdown to begin', () => server.output().includes('"closing"') || undefined))
        .then(() => req.end(body.payload.subarray(half)), reject);
    });
    await halfSent;
    server.kill('SIGTERM');
    const res = await answer;
    expect(res.status, res.text).toBe(200);
    expect(JSON.parse(res.text)).toMatchObject({ imported: 2, failed: 0 });
    expect(await exitOf(server)).toEqual({ code: 0, signal: null });
  }, 120_000);
});

const redisUrl = process.env.TEST_REDIS_URL;
describe.skipIf(!(redisUrl && dbKind() === 'postgres'))('SIGTERM to an import worker', () => {
  const prefix = `test-stop-${randomBytes(4).toString('hex')}`;
  let ctx: TestContext;
  afterAll(async () => {
    await ctx?.close();
    const redis = new Redis(redisUrl!, { maxRetriesPerRequest: null });
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  it('finishes the import it is running, then exits 0', async () => {
    ctx = await createTestContext({ REDIS_URL: redisUrl!, QUEUE_PREFIX: prefix, IMPORT_MAX_BYTES: String(20 * 1024 * 1024) });
    const schema = (await ctx.deps.db.query<{ s: string }>('SELECT current_schema() AS s'))[0]!.s;
    const company = await ctx.newCompany('Worker stop');
    const out: string[] = [];
    const expected = await generateCsv(
      { rows: 12_000, repeat: 0.3, invalid: 0.05, delimiter: ',', seed: 11 },
      (chunk) => void out.push(chunk),
    );
    const worker = startScript('worker', {
      DATABASE_URL: process.env.TEST_DATABASE_URL!,
      DB_SEARCH_PATH: schema,
      DB_POOL_SIZE: '3',
      REDIS_URL: redisUrl!,
      QUEUE_PREFIX: prefix,
      DOCUMENT_HASH_KEY: TEST_HASH_KEY,
      DATA_DIR: ctx.config.dataDir,
      IMPORT_CHUNK_SIZE: '500',
      WORKER_CONCURRENCY: '1',
    });
    await ready(worker, 'import worker ready');
    const res = await postImport(ctx.app, company.auth, out.join(''), { headers: { prefer: 'respond-async' } });
    expect(res.statusCode, res.body).toBe(202);
    const id = res.json().data.id as string;
    await until('the import to be mid-way', async () => {
      const run = (await ctx.deps.store.imports.findById(id))!;
      if (run.status === 'completed') throw new Error('the import finished before SIGTERM');
      return run.rowsDone > 0 || undefined;
    });
    worker.kill('SIGTERM');
    expect(await exitOf(worker)).toEqual({ code: 0, signal: null });
    const run = (await ctx.deps.store.imports.findById(id))!;
    expect(run.status).toBe('completed');
    expect((run.imported ?? 0) + (run.failed ?? 0)).toBe(expected.rows);
  }, 180_000);
});
