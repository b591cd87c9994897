/**
 * Upload speed and the API process's memory while it receives large imports (issue 56).
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test BENCH_REDIS_URL=redis://127.0.0.1:6379 npm run bench:upload
 *
 * In a schema of its own (dropped at the end), it starts the service on 127.0.0.1 as `npm start`
 * does (the built dist/main-api.mjs, built first) with REDIS_URL and no worker, so that the measured process only receives: local
 * storage in a temporary DATA_DIR, or S3 with BENCH_S3=1 (an s3rver started here). It then sends
 * BENCH_FILES (default 1) files of BENCH_MB (default 1024) MB at once, generated on the fly by
 * scripts/gen-csv.ts (never stored), as multipart `file` parts with `Prefer: respond-async`
 * (gzip-compressed with BENCH_GZIP=1), and prints each upload's MB/s and the API's resident
 * memory before and at its peak (VmHWM of /proc/<pid>/status), and the API's CPU time while it
 * received (user + system of /proc/<pid>/stat, all its threads): the file's MB per CPU-second is
 * the speed the API could reach with a core to itself. BENCH_FILE=<path> sends that file instead
 * of a generated one (no generator on the same cores). BENCH_CPU_PROF=1 runs the API under
 * `node --cpu-prof` (profiles in BENCH_OUT, default <tmp>/claims-bench-upload). With BENCH_S3=1 and
 * BENCH_FILE, the same file is then put into the same s3rver by the minio client alone (its own
 * `putObject`, no service, no checks): the store's own pace on this machine, printed beside the
 * service's. BENCH_PROBE=1 sends a plate search every 20 ms from a thread of its own (its own event
 * loop, beside the sender's) for 5 s idle before the uploads, then while they are received, and
 * prints each phase's p50 and p99 and the p99 during the uploads ÷ idle (the registry is empty: what
 * a search waits for here is the server's thread and the cores, not the database).
 * BENCH_SENDER=curl has curl send BENCH_FILE from the disk instead of this process (a sender of
 * little CPU, as a client on another machine would be). BENCH_ROUNDS=n sends the uploads n times,
 * one round after the other (a probe long enough for its p99 to mean something). BENCH_NODE_FLAGS
 * are given to the service's node (`--max-semi-space-size=1`, say). UPLOAD_PACE_BYTES_PER_SECOND, when
 * set, is given to the service (`0` reads the uploads unpaced beside the probe's searches).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { promisify } from 'node:util';
import { Worker } from 'node:worker_threads';
import { createGzip } from 'node:zlib';

import { Redis } from 'ioredis';
import { Client } from 'minio';

import { openDb } from '../src/db/db';
import { createCompanyRepository } from '../src/db/company-repository';
import { prepareDatabase } from '../src/startup';
import { buildAll } from '../scripts/build';
import { generateCsv } from '../scripts/gen-csv';

import { benchNodeFlags, createBenchToken, freePort, procMb, startNode, stopNode, waitReady } from './bench-process';

const url = process.env.BENCH_DATABASE_URL;
const redisUrl = process.env.BENCH_REDIS_URL;
if (!url || !redisUrl) {
  console.error('Set BENCH_DATABASE_URL and BENCH_REDIS_URL (see the comment at the top of bench/upload.ts).');
  process.exit(2);
}
const mbPerFile = Number(process.env.BENCH_MB ?? 1024);
const files = Number(process.env.BENCH_FILES ?? 1);
const gzip = process.env.BENCH_GZIP === '1';
const useS3 = process.env.BENCH_S3 === '1';
const sourceFile = process.env.BENCH_FILE;
const probing = process.env.BENCH_PROBE === '1';
const curlSender = process.env.BENCH_SENDER === 'curl';
const rounds = Number(process.env.BENCH_ROUNDS ?? 1);
const outDir = path.resolve(process.env.BENCH_OUT ?? path.join(os.tmpdir(), 'claims-bench-upload'));
const KEY = 'bench-upload-document-key-0123456789abcdef';
const ROWS_PER_MB = 2_000_000 / 196.6;
const execFileAsync = promisify(execFile);
if (curlSender && (!sourceFile || gzip)) {
  console.error('BENCH_SENDER=curl sends BENCH_FILE as it is: set BENCH_FILE, and not BENCH_GZIP.');
  process.exit(2);
}

/** A generated CSV of about `mb` MB as a stream of bytes (gzip-compressed when asked). */
function generated(mb: number): Readable {
  if (sourceFile) {
    const file = fs.createReadStream(sourceFile, { highWaterMark: 1024 * 1024 });
    return gzip ? file.pipe(createGzip({ level: 1 })) : file;
  }
  const out = new PassThrough({ highWaterMark: 1024 * 1024 });
  void generateCsv({ rows: Math.round(mb * ROWS_PER_MB), repeat: 0.3, invalid: 0, delimiter: ',' }, (chunk) =>
    out.write(chunk) ? undefined : new Promise<void>((resolve) => out.once('drain', () => resolve())),
  ).then(
    () => out.end(),
    (err: unknown) => out.destroy(err as Error),
  );
  return gzip ? out.pipe(createGzip({ level: 1 })) : out;
}

/** A process's CPU time so far in seconds (user + system, all threads), or null (not Linux, process gone). */
function cpuSeconds(pid: number | undefined): number | null {
  try {
    // The fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}

/** A multipart body around the file, streamed; resolves with the bytes sent once the answer came. */
async function upload(base: string, token: string, n: number): Promise<{ status: number; bytes: number; seconds: number }> {
  const boundary = `bench${randomBytes(8).toString('hex')}`;
  let bytes = 0;
  async function* body() {
    yield Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="bench-${n}.csv${gzip ? '.gz' : ''}"\r\nContent-Type: text/csv\r\n\r\n`,
    );
    for await (const chunk of generated(mbPerFile)) {
      bytes += (chunk as Buffer).length;
      yield chunk as Buffer;
    }
    yield Buffer.from(`\r\n--${boundary}--\r\n`);
  }
  const started = performance.now();
  const res = await fetch(`${base}/api/v1/claims/import`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': `multipart/form-data; boundary=${boundary}`, prefer: 'respond-async' },
    body: Readable.toWeb(Readable.from(body())) as ReadableStream,
    duplex: 'half',
  });
  const text = await res.text();
  const seconds = (performance.now() - started) / 1000;
  if (res.status !== 202) console.error(`upload ${n}: ${res.status} ${text.slice(0, 300)}`);
  return { status: res.status, bytes, seconds };
}

/**
 * The file sent by curl from the disk (`-F file=@…`) rather than by this process: a sender that
 * takes little CPU, so that the cores measured are the service's.
 */
async function curlUpload(base: string, token: string): Promise<{ status: number; bytes: number; seconds: number }> {
  const started = performance.now();
  const { stdout } = await execFileAsync('curl', [
    '-sS',
    '-o',
    '/dev/null',
    '-w',
    '%{http_code}',
    '-H',
    `authorization: Bearer ${token}`,
    '-H',
    'prefer: respond-async',
    '-H',
    'expect:',
    '-F',
    `file=@${sourceFile!};type=text/csv`,
    `${base}/api/v1/claims/import`,
  ]);
  const seconds = (performance.now() - started) / 1000;
  const status = Number(stdout.trim());
  if (status !== 202) console.error(`upload by curl: ${status}`);
  return { status, bytes: fs.statSync(sourceFile!).size, seconds };
}

/** The file put into s3rver by the minio client alone (`putObject` of a file stream of known size): MB/s. */
async function bareS3Put(port: number, file: string): Promise<number> {
  // One PUT (parts as large as the file): s3rver does not list incomplete uploads, which the client's multipart path asks first.
  const client = new Client({
    endPoint: '127.0.0.1',
    port,
    useSSL: false,
    accessKey: 'S3RVER',
    secretKey: 'S3RVER',
    pathStyle: true,
    partSize: 1024 * 1024 * 1024,
  });
  if (!(await client.bucketExists('bench-bare'))) await client.makeBucket('bench-bare');
  const { size } = fs.statSync(file);
  const started = performance.now();
  await client.putObject('bench-bare', 'bare.csv', fs.createReadStream(file, { highWaterMark: 1024 * 1024 }), size);
  const seconds = (performance.now() - started) / 1000;
  await client.removeObject('bench-bare', 'bare.csv');
  return size / 1e6 / seconds;
}

/**
 * The search probe's thread: a plate search every 20 ms, each sent on schedule whatever the ones
 * before it do; on 'phase' messages it labels the samples that follow, on 'stop' it answers with
 * every sample once the last has come back.
 */
const PROBE_THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const { base, token } = workerData;
let phase = 'warm-up';
const samples = [];
const inFlight = new Set();
const timer = setInterval(() => {
  const sentIn = phase;
  const t0 = performance.now();
  const p = fetch(base + '/api/v1/claims/search-by-plate', {
    method: 'POST',
    headers: { authorization: 'Bearer ' + token, 'content-type': 'application/json' },
    body: JSON.stringify({ vehicle_registration: 'PR' + String(Math.floor(Math.random() * 1e5)).padStart(5, '0') }),
  }).then((r) => r.arrayBuffer().then(() => r.ok), () => false)
    .then((ok) => { samples.push({ phase: sentIn, ms: performance.now() - t0, ok }); inFlight.delete(p); });
  inFlight.add(p);
}, 20);
parentPort.on('message', async (m) => {
  if (m.phase) phase = m.phase;
  if (m.stop) { clearInterval(timer); await Promise.all(inFlight); parentPort.postMessage(samples); }
});
`;

/** Starts the probe; `phase(name)` labels the samples from then on, `stop()` prints p50/p99 per phase. */
function startProbe(base: string, token: string) {
  const thread = new Worker(PROBE_THREAD, { eval: true, workerData: { base, token } });
  return {
    phase: (name: string) => thread.postMessage({ phase: name }),
    async stop() {
      const samples = await new Promise<{ phase: string; ms: number; ok: boolean }[]>((resolve) => {
        thread.once('message', resolve);
        thread.postMessage({ stop: true });
      });
      await thread.terminate();
      const p = (phase: string, q: number) => {
        const ms = samples
          .filter((x) => x.phase === phase)
          .map((x) => x.ms)
          .sort((a, b) => a - b);
        return ms[Math.min(ms.length - 1, Math.floor(q * ms.length))] ?? NaN;
      };
      for (const phase of ['idle', 'upload']) {
        const n = samples.filter((x) => x.phase === phase);
        console.log(
          `  search ${phase.padEnd(6)} p50 ${p(phase, 0.5).toFixed(1)} ms  p99 ${p(phase, 0.99).toFixed(1)} ms  (n=${n.length}, errors ${n.filter((x) => !x.ok).length})`,
        );
      }
      console.log(`  search p99 during the upload ÷ idle: ${(p('upload', 0.99) / p('idle', 0.99)).toFixed(2)}`);
    },
  };
}

async function main() {
  const schema = `bench_upload_${randomBytes(4).toString('hex')}`;
  const prefix = `bench-upload-${randomBytes(4).toString('hex')}`;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'claims-bench-upload-'));
  const admin = await openDb({ kind: 'postgres', url: url!, poolSize: 1 });
  await admin.exec(`CREATE SCHEMA ${schema}`);
  const db = await openDb({ kind: 'postgres', url: url!, poolSize: 2, searchPath: schema });
  type S3rver = { run(): Promise<{ port: number }>; close(): Promise<void> };
  let s3: S3rver | undefined;
  let api: ReturnType<typeof startNode> | undefined;
  try {
    await prepareDatabase(db, KEY);
    const company = (await createCompanyRepository(db).insert(`Bench upload ${randomBytes(3).toString('hex')}`))!;
    const { token } = await createBenchToken(db, company.id, 'bench upload');
    const s3Env: Record<string, string> = {};
    let s3Port: number | undefined;
    if (useS3) {
      const S3rverClass = createRequire(import.meta.url)('s3rver') as new (opts: Record<string, unknown>) => S3rver;
      s3 = new S3rverClass({ address: '127.0.0.1', port: 0, silent: true, directory: path.join(dataDir, 's3') });
      const { port } = await s3.run();
      s3Port = port;
      Object.assign(s3Env, {
        S3_ENDPOINT: `http://127.0.0.1:${port}`,
        S3_ACCESS_KEY: 'S3RVER',
        S3_SECRET_KEY: 'S3RVER',
        S3_BUCKET: 'bench-upload',
      });
    }
    const port = freePort();
    const args = [
      ...benchNodeFlags(),
      ...(process.env.BENCH_CPU_PROF === '1' ? ['--cpu-prof', `--cpu-prof-dir=${outDir}`] : []),
      await buildAll(),
    ];
    api = startNode(
      'api',
      args,
      {
        DATABASE_URL: url!,
        DB_SEARCH_PATH: schema,
        DOCUMENT_HASH_KEY: KEY,
        SESSION_SECRET: 'bench-session-secret-0123456789abcdef0123',
        DATA_DIR: dataDir,
        HOST: '127.0.0.1',
        PORT: String(port),
        METRICS_PORT: String(freePort()),
        REDIS_URL: redisUrl!,
        QUEUE_PREFIX: prefix,
        LOG_LEVEL: 'warn',
        IMPORT_MAX_BYTES: String(4 * 1024 * 1024 * 1024),
        IMPORT_UPLOAD_TIMEOUT_SECONDS: '3600',
        ...(process.env.UPLOAD_PACE_BYTES_PER_SECOND ? { UPLOAD_PACE_BYTES_PER_SECOND: process.env.UPLOAD_PACE_BYTES_PER_SECOND } : {}),
        ...s3Env,
      },
      outDir,
    );
    const base = `http://127.0.0.1:${port}`;
    await waitReady(api, `${base}/readyz`, 'api', outDir);
    const before = procMb(api.pid, 'VmRSS');
    console.log(
      `${files} upload(s) of ${mbPerFile} MB${gzip ? ' (gzip)' : ''} into ${useS3 ? 'S3 (s3rver)' : 'local storage'}; API RSS before ${before} MB`,
    );
    const probe = probing ? startProbe(base, token) : undefined;
    if (probe) {
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      probe.phase('idle');
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      probe.phase('upload');
    }
    const cpuBefore = cpuSeconds(api.pid);
    const started = performance.now();
    const results: Awaited<ReturnType<typeof upload>>[] = [];
    for (let round = 0; round < rounds; round++) {
      results.push(
        ...(await Promise.all(
          Array.from({ length: files }, (_, i) => (curlSender ? curlUpload(base, token) : upload(base, token, i + 1))),
        )),
      );
    }
    const wall = (performance.now() - started) / 1000;
    const cpu = cpuBefore === null ? null : (cpuSeconds(api.pid) ?? cpuBefore) - cpuBefore;
    for (const [i, r] of results.entries()) {
      console.log(
        `  upload ${i + 1}: ${r.status}, ${(r.bytes / 1e6).toFixed(0)} MB sent in ${r.seconds.toFixed(1)} s: ${(r.bytes / 1e6 / r.seconds).toFixed(1)} MB/s`,
      );
    }
    probe?.phase('done');
    const total = results.reduce((s, r) => s + r.bytes, 0);
    console.log(`  all: ${(total / 1e6 / wall).toFixed(1)} MB/s; API peak RSS (VmHWM) ${procMb(api.pid, 'VmHWM')} MB`);
    if (cpu !== null) console.log(`  API CPU while receiving: ${cpu.toFixed(2)} s, ${(total / 1e6 / cpu).toFixed(1)} MB per CPU-second`);
    await probe?.stop();
    if (s3Port !== undefined && sourceFile && !gzip) {
      const bare = await bareS3Put(s3Port, sourceFile);
      console.log(
        `  the minio client's own putObject of the same file into the same s3rver: ${bare.toFixed(1)} MB/s; the service ÷ it: ${(total / 1e6 / wall / bare).toFixed(2)}`,
      );
    }
  } finally {
    await stopNode(api);
    await s3?.close();
    await db.close();
    await admin.exec(`DROP SCHEMA ${schema} CASCADE`);
    await admin.close();
    const redis = new Redis(redisUrl!, { maxRetriesPerRequest: null });
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
