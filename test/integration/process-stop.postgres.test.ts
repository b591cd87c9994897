import fs from 'node:fs';
import http from 'node:http';
import { randomUUID } from 'node:crypto';

import { afterAll, afterEach, describe, expect, it } from 'vitest';

import { createTestContext, TEST_HASH_KEY, type TestContext } from '../harness';
import { csv, multipart, validRow } from '../import-helpers';
import { exitOf, freePort, killAll, printed, startScript, until } from '../processes';

/**
 * `npm start` as the container starts it (the npm script's command, which the Dockerfile and
 * docker-compose.yml use too), on PostgreSQL without REDIS_URL: imports on its import thread, and
 * SIGTERM lets in-flight requests and running imports finish, then the process exits 0.
 */
afterEach(killAll);

describe('npm start on PostgreSQL without REDIS_URL', () => {
  let ctx: TestContext;
  afterAll(async () => ctx?.close());

  /** `npm start` on this test's PostgreSQL schema, ready to answer on `port`. */
  async function startServer(env: Record<string, string> = {}) {
    ctx ??= await createTestContext();
    const schema = (await ctx.deps.db.query<{ s: string }>('SELECT current_schema() AS s'))[0]!.s;
    const port = await freePort();
    const server = startScript('start', {
      LOG_LEVEL: 'info',
      HOST: '127.0.0.1',
      DATABASE_URL: process.env.TEST_DATABASE_URL!,
      DB_SEARCH_PATH: schema,
      DB_POOL_SIZE: '3',
      DOCUMENT_HASH_KEY: TEST_HASH_KEY,
      SESSION_SECRET: 'test-session-secret-0123456789abcdef0123',
      DATA_DIR: ctx.config.dataDir,
      PORT: String(port),
      ...env,
    });
    await printed(server, 'claims registry ready');
    return { server, port };
  }

  it('runs imports on its import thread: the summary, the stored claims, the metrics', async () => {
    const metricsPort = await freePort();
    const { server, port } = await startServer({ METRICS_PORT: String(metricsPort) });
    await printed(server, 'import thread ready');
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
    expect(metrics).toMatch(/^claims_import_rows_processed_total\{process="[^"]+"\} 3$/mu);
    expect(metrics).toMatch(/^claims_import_rows_failed_total\{process="[^"]+"\} 1$/mu);
  }, 120_000);

  it("runs its import thread and its upload inspection thread at IMPORT_THREAD_NICE, its own thread at the process's priority (Linux)", async () => {
    const { server, port } = await startServer({ IMPORT_THREAD_NICE: '7' });
    await printed(server, 'import thread ready');
    // The first upload starts the inspection thread.
    const company = await ctx.newCompany('Nice');
    const body = await multipart(csv([validRow()]));
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/claims/import`, {
      method: 'POST',
      headers: { ...company.auth, 'content-type': body.contentType },
      body: body.payload,
    });
    expect(res.status).toBe(200);
    // Each thread's nice value: field 19 of /proc/<pid>/task/<tid>/stat, the 17th after the command's name.
    const nices = fs.readdirSync(`/proc/${server.pid}/task`).map((tid) => {
      const stat = fs.readFileSync(`/proc/${server.pid}/task/${tid}/stat`, 'utf8');
      return { tid: Number(tid), nice: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]) };
    });
    expect(nices.find((t) => t.tid === server.pid)?.nice).toBe(0);
    expect(nices.filter((t) => t.nice === 7)).toHaveLength(2);
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
    await printed(server, 'import stopped');
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
