/**
 * A batch plate look-up of 100,000 rows through the API, upload to completed, against the goal of
 * issue 25 (under 10 s, memory flat).
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/<seeded db> BENCH_DOCUMENT_HASH_KEY=<its key> npm run bench:lookup-batch
 *   BENCH_REDIS_URL=redis://127.0.0.1:6379 …   also through BullMQ and a worker process
 *
 * On a seeded database (1,000,000 claims over 289,257 plates for the figures in
 * docs/registry-alerts.md) it writes a CSV of BENCH_PLATES rows (default 100,000): plates drawn at
 * random from the database's own (one in ten written in lower case with a dash, as files come),
 * and a share BENCH_UNKNOWN_SHARE (default 0.1) of plates no claim has. Then, for each mode, it
 * starts the service on 127.0.0.1 (`src/main-api.ts`, pool 10; the in-process runner without
 * REDIS_URL; with BENCH_REDIS_URL, the API and one `npm run worker` process on a queue prefix of
 * their own), with a throw-away token of one company (BENCH_COMPANY by name, else the company with
 * the most claims), and:
 *
 * - uploads the file to POST /api/v1/lookups/batch and polls GET /lookups/batch/{id} every 100 ms
 *   until it is completed (at most BENCH_TIMEOUT_SECONDS, default 120);
 * - downloads results.csv as a stream, counting its lines;
 * - counts the look-up log entries the batch wrote, and reads each process's resident memory
 *   before the upload and its peak (VmHWM of /proc/<pid>/status) at the end.
 *
 * BENCH_CPU_PROF=1 runs the processes under `node --cpu-prof` and prints the functions with the
 * most self time. At the end it deletes what it wrote (the batches with their results, their
 * look-up entries, the token, the queue's keys in Redis), runs VACUUM ANALYZE on those tables
 * and puts the daily retention run's time back. Logs and profiles go to BENCH_OUT (default
 * <tmp>/claims-bench-lookup-batch).
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

import { Redis } from 'ioredis';

import { openDb } from '../src/db/db';

import {
  benchCompany,
  createBenchToken,
  deleteBenchToken,
  freePort,
  holdRetention,
  interruptible,
  procMb,
  startNode,
  stopNode,
  waitReady,
} from './bench-process';

const url = process.env.BENCH_DATABASE_URL;
const key = process.env.BENCH_DOCUMENT_HASH_KEY;
if (!url || !key) {
  console.error('Set BENCH_DATABASE_URL and BENCH_DOCUMENT_HASH_KEY (see the comment at the top of bench/lookup-batch.ts).');
  process.exit(2);
}
const redisUrl = process.env.BENCH_REDIS_URL;
const rows = Number(process.env.BENCH_PLATES ?? 100_000);
const unknownShare = Number(process.env.BENCH_UNKNOWN_SHARE ?? 0.1);
const timeoutSeconds = Number(process.env.BENCH_TIMEOUT_SECONDS ?? 120);
const cpuProfile = process.env.BENCH_CPU_PROF === '1';
const outDir = path.resolve(process.env.BENCH_OUT ?? path.join(os.tmpdir(), 'claims-bench-lookup-batch'));
const GOAL_SECONDS = 10;
const signal = interruptible();

/** The plates file: `policy,vehicle_registration`, known plates drawn with replacement, unknown ones mixed in. */
function writePlatesFile(known: string[], file: string): void {
  const lines = ['policy,vehicle_registration'];
  for (let i = 1; i <= rows; i++) {
    let plate: string;
    if (Math.random() < unknownShare) plate = `ZZ${randomBytes(4).toString('hex').toUpperCase()}`;
    else {
      plate = known[Math.floor(Math.random() * known.length)]!;
      if (i % 10 === 0) plate = `${plate.slice(0, 2).toLowerCase()}-${plate.slice(2)}`;
    }
    lines.push(`P${i},${plate}`);
  }
  fs.writeFileSync(file, `${lines.join('\r\n')}\r\n`);
}

/** The functions with the most self time in a .cpuprofile (the main thread's: the largest file of the process). */
function topSelfTime(dir: string, count = 15): string[] {
  if (!fs.existsSync(dir)) return [];
  const files = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => path.join(dir, f))
    .sort((a, b) => fs.statSync(b).size - fs.statSync(a).size);
  if (!files[0]) return [];
  type Node = { id: number; callFrame: { functionName: string; url: string; lineNumber: number } };
  const profile = JSON.parse(fs.readFileSync(files[0], 'utf8')) as { nodes: Node[]; samples: number[]; timeDeltas: number[] };
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const f = byId.get(id)!.callFrame;
    const name = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(node_modules|src)\//u, '$1/')}:${f.lineNumber + 1}`;
    const dt = profile.timeDeltas[i] ?? 0;
    self.set(name, (self.get(name) ?? 0) + dt);
    total += dt;
  });
  return [...self.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, us]) => `${((us / total) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${name}`);
}

const db = await openDb({ kind: 'postgres', url, poolSize: 2 });
const prefix = `bench-batch-${randomBytes(4).toString('hex')}`;
const batchIds: string[] = [];
let tokenId: string | undefined;
let restoreRetention: (() => Promise<void>) | undefined;
const children: ChildProcess[] = [];
try {
  const company = await benchCompany(db, process.env.BENCH_COMPANY);
  const known = (await db.query<{ p: string }>('SELECT DISTINCT vehicle_registration AS p FROM claims')).map((r) => r.p);
  fs.mkdirSync(outDir, { recursive: true });
  const file = path.join(outDir, 'plates.csv');
  writePlatesFile(known, file);
  console.log(
    `database: ${known.length.toLocaleString('en')} plates; company "${company.name}"; file: ${rows.toLocaleString('en')} rows, ${(fs.statSync(file).size / 1e6).toFixed(1)} MB, ${Math.round(unknownShare * 100)}% unknown plates`,
  );
  const token = await createBenchToken(db, company.id, `plate batch bench ${prefix}`);
  tokenId = token.id;
  restoreRetention = await holdRetention(db);
  const headers = { authorization: `Bearer ${token.token}`, accept: 'application/json' };

  const modes: ('in-process' | 'bullmq')[] = redisUrl ? ['in-process', 'bullmq'] : ['in-process'];
  const results: Record<string, unknown>[] = [];
  for (const mode of modes) {
    const port = freePort();
    const base = `http://127.0.0.1:${port}`;
    const env: Record<string, string> = {
      DATABASE_URL: url,
      DOCUMENT_HASH_KEY: key,
      SESSION_SECRET: randomBytes(32).toString('base64url'),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      DB_POOL_SIZE: '10',
      // Both processes of a mode store and read the uploaded file in the same folder.
      DATA_DIR: path.join(outDir, `data-${mode}`),
      ...(mode === 'bullmq' ? { REDIS_URL: redisUrl!, QUEUE_PREFIX: prefix } : {}),
    };
    const prof = (name: string) => (cpuProfile ? ['--cpu-prof', `--cpu-prof-dir=${path.join(outDir, `prof-${name}`)}`] : []);
    const api = startNode(
      `api-${mode}`,
      [...prof(`api-${mode}`), '--import', 'tsx', 'src/main-api.ts'],
      { ...env, PORT: String(port) },
      outDir,
    );
    children.push(api);
    let worker: ChildProcess | undefined;
    if (mode === 'bullmq') {
      const metricsPort = freePort();
      // As `npm run worker` starts it (package.json's flags).
      worker = startNode(
        'worker',
        [...prof('worker'), '--expose-gc', '--import', 'tsx', 'src/main-worker.ts'],
        { ...env, WORKER_METRICS_PORT: String(metricsPort) },
        outDir,
      );
      children.push(worker);
      await waitReady(worker, `http://127.0.0.1:${metricsPort}/metrics`, 'worker', outDir);
    }
    await waitReady(api, `${base}/readyz`, `api-${mode}`, outDir);
    const before = { api: procMb(api.pid, 'VmRSS'), worker: procMb(worker?.pid, 'VmRSS') };

    const purpose = `plate batch bench ${prefix} ${mode}`;
    const form = new FormData();
    form.append('purpose', purpose);
    form.append('file', new Blob([fs.readFileSync(file)], { type: 'text/csv' }), 'plates.csv');
    const t0 = performance.now();
    const posted = await fetch(`${base}/api/v1/lookups/batch`, { method: 'POST', headers, body: form });
    if (posted.status !== 202) throw new Error(`upload answered ${posted.status}: ${await posted.text()}`);
    const { data } = (await posted.json()) as { data: { id: string } };
    batchIds.push(data.id);
    const accepted = performance.now() - t0;
    let batch: { status: string; rows_done: number; distinct_plates: number; invalid_rows: number; message: string | null };
    for (;;) {
      signal.throwIfAborted();
      batch = ((await (await fetch(`${base}/api/v1/lookups/batch/${data.id}`, { headers })).json()) as { data: typeof batch }).data;
      if (batch.status === 'completed' || batch.status === 'failed') break;
      if (performance.now() - t0 > timeoutSeconds * 1000) throw new Error(`the batch did not finish within ${timeoutSeconds} s`);
      await sleep(100);
    }
    const done = performance.now() - t0;
    if (batch.status !== 'completed') throw new Error(`the batch failed: ${batch.message}`);

    const t1 = performance.now();
    const csv = await fetch(`${base}/api/v1/lookups/batch/${data.id}/results.csv`, { headers });
    if (csv.status !== 200 || !csv.body) throw new Error(`results.csv answered ${csv.status}`);
    let lines = 0;
    for await (const chunk of csv.body as unknown as AsyncIterable<Uint8Array>) for (const byte of chunk) if (byte === 10) lines++;
    const downloaded = performance.now() - t1;
    const [logged] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM lookups WHERE token_id = $1 AND purpose = $2', [
      tokenId,
      purpose,
    ]);
    const peak = { api: procMb(api.pid, 'VmHWM'), worker: procMb(worker?.pid, 'VmHWM') };
    await stopNode(worker);
    await stopNode(api);

    const seconds = done / 1000;
    console.log(`\n${mode}: ${rows.toLocaleString('en')} rows, ${batch.distinct_plates.toLocaleString('en')} distinct plates`);
    console.log(
      `  upload answered 202 in ${accepted.toFixed(0)} ms; completed after ${seconds.toFixed(1)} s (goal: under ${GOAL_SECONDS} s: ${seconds < GOAL_SECONDS ? 'met' : 'MISSED'})`,
    );
    console.log(
      `  results.csv: ${(lines - 1).toLocaleString('en')} rows in ${downloaded.toFixed(0)} ms; look-up log entries written: ${logged!.n.toLocaleString('en')}`,
    );
    console.log(
      `  memory (MB): API ${before.api} before the upload, peak ${peak.api}${worker ? `; worker ${before.worker} before, peak ${peak.worker}` : ''}`,
    );
    results.push({
      mode,
      rows,
      distinct: batch.distinct_plates,
      seconds,
      accepted_ms: accepted,
      csv_rows: lines - 1,
      csv_ms: downloaded,
      logged: logged!.n,
      before,
      peak,
    });
    if (cpuProfile) {
      for (const name of [`api-${mode}`, ...(worker ? ['worker'] : [])]) {
        console.log(`  ${name}: self time, top functions (${path.join(outDir, `prof-${name}`)})`);
        for (const line of topSelfTime(path.join(outDir, `prof-${name}`))) console.log(`    ${line}`);
      }
    }
  }
  console.log(JSON.stringify({ kind: 'lookup-batch-bench', at: new Date().toISOString(), loadavg: os.loadavg(), results }));
} finally {
  for (const child of children) await stopNode(child);
  if (tokenId) {
    const [gone] = await db.query<{ n: number }>(
      'WITH d AS (DELETE FROM lookups WHERE token_id = $1 RETURNING 1) SELECT count(*)::int AS n FROM d',
      [tokenId],
    );
    // The results go with their batch (ON DELETE CASCADE).
    await db.query('DELETE FROM lookup_batches WHERE id = ANY ($1::uuid[])', [batchIds]);
    await deleteBenchToken(db, tokenId);
    await db.exec('VACUUM ANALYZE lookups, lookup_batches, lookup_batch_results');
    console.log(`\ncleaned up: ${batchIds.length} batches, ${gone!.n.toLocaleString('en')} look-up entries, the token`);
  }
  await restoreRetention?.();
  await db.close();
  if (redisUrl) {
    const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
    // The queue's keys, found with SCAN (KEYS would hold up the Redis everyone shares).
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
    redis.disconnect();
  }
  for (const mode of ['in-process', 'bullmq']) fs.rmSync(path.join(outDir, `data-${mode}`), { recursive: true, force: true });
}
