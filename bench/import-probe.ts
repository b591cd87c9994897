/**
 * Other requests while an import runs:
 *
 *   npm run bench:embedded -- [--rows 90000] [--interval 20] [--warmup 3] [--idle 10]
 *   npm run bench:probe -- --database-url postgres://postgres@127.0.0.1:5432/test [--seed-claims 200000] [...]
 *
 * Starts the server as a user would (`npm start`: the built `dist/main-api.mjs`): embedded (no
 * DATABASE_URL: PGlite in a fresh DATA_DIR), or with --database-url on a throw-away database
 * created there (dropped at the end), seeded with --seed-claims claims (bench/seed.ts), the import
 * then running in the server's process (no REDIS_URL). It uploads a generated CSV (30% repeat
 * persons) with `Prefer: respond-async`, and while the import runs sends, one every --interval ms
 * in turn, the requests of everyone else: a claims list (`GET /api/v1/claims`), a plate search
 * (`POST /api/v1/claims/search-by-plate`) and the import's own status (`GET /api/v1/imports/{id}`).
 * On PostgreSQL it first does the same while the database loads the same file on its own (COPY
 * and INSERT..SELECT, bench/copy-rows.ts, in a transaction then rolled back): the yardstick for
 * what a bulk load alone does to the other requests. Prints p50/p99/max per request kind and
 * phase (idle for --idle seconds before, during the COPY, during the import, idle again for
 * --idle seconds after), the import's time (upload to completed) and the server's peak RSS
 * (VmHWM). Before the idle phase the seeded registry is vacuumed, read into shared buffers
 * (pg_prewarm) and checkpointed, and the server answers 2,000 requests and then --warmup seconds
 * of probes that are left out (a new process compiles its hot code over its first requests); the
 * idle phases are long enough for a p99 of a few hundred searches. The two idle p99s agreeing is
 * what says the machine was steady. A new request is sent on schedule even while
 * earlier ones wait, so a server that stops answering shows as a long tail, not as fewer samples.
 * Everything it creates (the folder, the database, the process) is removed.
 * IMPORT_* variables pass through to the server (IMPORT_CHUNK_SIZE=5000 to compare, say);
 * PROBE_DUMP=file.json writes every sample (kind, phase, sent at, ms), PROBE_SERVER_LOG=file the
 * server's log at info level.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';

import postgres from 'postgres';

import { buildAll } from '../scripts/build';
import { generateCsvFile } from '../scripts/gen-csv';
import { openDb } from '../src/db/db';
import { copyRows } from './copy-rows';
import { seedRegistry, seedShape } from './seed';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '90000' },
    interval: { type: 'string', default: '20' },
    warmup: { type: 'string', default: '3' },
    idle: { type: 'string', default: '10' },
    'database-url': { type: 'string' },
    'seed-claims': { type: 'string', default: '200000' },
  },
});
const ROWS = Number(values.rows);
const INTERVAL_MS = Number(values.interval);
const IDLE_S = Number(values.idle);
const WARMUP_S = Number(values.warmup);
const baseUrl = values['database-url'];

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'import-probe-'));
const dataDir = path.join(work, 'data');
// PostgreSQL: a throw-away database beside the one named.
const dbName = `claims_probe_${randomBytes(4).toString('hex')}`;
const dbUrl = baseUrl?.replace(/\/[^/]*$/u, `/${dbName}`);
const hashKey = randomBytes(32).toString('base64url');
// A clean environment (nothing from a local .env), but IMPORT_* settings pass through to try them.
const env = {
  PATH: process.env.PATH ?? '',
  HOME: process.env.HOME ?? '',
  DATA_DIR: dataDir,
  LOG_LEVEL: 'warn',
  ...(dbUrl ? { DATABASE_URL: dbUrl, DOCUMENT_HASH_KEY: hashKey, SESSION_SECRET: randomBytes(32).toString('base64url') } : {}),
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('IMPORT_'))),
};
const pgAdmin = baseUrl ? postgres(baseUrl, { max: 1, onnotice: () => {} }) : undefined;
await pgAdmin?.unsafe(`CREATE DATABASE ${dbName}`);

/** The admin command line, as `npm run admin -- …` runs it, with --json. */
function admin(args: string[]): Record<string, unknown> {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/main-admin.ts', ...args, '--json'], { cwd: root, env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`admin ${args[0]} failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

const peakRssMb = (pid: number) => Number(/VmHWM:\s+(\d+) kB/u.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
function quantile(sorted: number[], q: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
}

/** Ends the COPY's transaction without keeping its rows. */
class Rollback extends Error {}

type Kind = 'list' | 'search' | 'status';
type Phase = 'warmup' | 'idle' | 'copy' | 'pause' | 'import' | 'after';
type Sample = { kind: Kind; phase: Phase; at: number; ms: number; ok: boolean };

/** Everything that needs cleaning up after it: the server, the folder, the database. */
async function run() {
  const company = admin(['company:create', '--name', 'Probe Insurance']);
  const { token } = admin(['token:create', '--company', String(company.id), '--name', 'probe']) as { token: string };
  const file = path.join(work, 'probe.csv');
  const stats = await generateCsvFile(file, { rows: ROWS, repeat: 0.3, invalid: 0, delimiter: ',', seed: 7 });
  const shape = seedShape(Number(values['seed-claims']));
  if (dbUrl) {
    const other = admin(['company:create', '--name', 'Other Insurance']);
    console.log(`seeding ${shape.claims.toLocaleString('en')} claims…`);
    const db = await openDb({ kind: 'postgres', url: dbUrl, poolSize: 1 });
    await seedRegistry(db, shape, { companyId: String(company.id), otherCompanyId: String(other.id), hashKey });
    // Settled before the idle phase: no autovacuum of the fresh rows, no checkpoint of them, and
    // the registry's tables and indexes in shared buffers (pg_prewarm, where the server has it),
    // so that the idle searches read what they would read on a server that has been running.
    await db.query('VACUUM (ANALYZE)');
    await db.query('CREATE EXTENSION IF NOT EXISTS pg_prewarm').catch(() => {});
    await db
      .query(
        `SELECT pg_prewarm(c.oid) FROM pg_class c
          WHERE c.relname IN ('claims', 'clients', 'identity_documents', 'companies')
             OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid IN ('claims'::regclass, 'clients'::regclass, 'identity_documents'::regclass))`,
      )
      .catch(() => {});
    await db.query('CHECKPOINT');
    await db.close();
  }
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const server = spawn(process.execPath, [await buildAll()], {
    cwd: root,
    env: {
      ...env,
      LOG_LEVEL: process.env.PROBE_SERVER_LOG ? 'info' : 'warn',
      HOST: '127.0.0.1',
      PORT: String(port),
      IMPORT_MAX_BYTES: String(stats.bytes + 1024 * 1024),
    },
    stdio: ['ignore', process.env.PROBE_SERVER_LOG ? fs.openSync(process.env.PROBE_SERVER_LOG, 'w') : 'ignore', 'inherit'],
  });
  const auth = { authorization: `Bearer ${token}`, accept: 'application/json' };

  try {
    for (let i = 0; ; i++) {
      if (i > 300) throw new Error('the server did not start within 60 s');
      if (
        await fetch(`${url}/readyz`).then(
          (r) => r.ok,
          () => false,
        )
      )
        break;
      await sleep(200);
    }
    // Embedded: a plate the file holds, so the search has rows to find once the import completes;
    // PostgreSQL: any plate of the seeded registry.
    const filePlate = fs.readFileSync(file, 'utf8').slice(0, 4096).split(/\r?\n/u)[1]!.split(',')[6]!;
    const plate = () => (dbUrl ? shape.plate(Math.floor(Math.random() * shape.plates)) : filePlate);
    const upload: { importId?: string } = {};
    let phase: Phase = 'warmup';
    const samples: Sample[] = [];
    const inFlight = new Set<Promise<void>>();
    const send = (kind: Kind) => {
      const init: RequestInit =
        kind === 'search'
          ? {
              method: 'POST',
              headers: { ...auth, 'content-type': 'application/json' },
              body: JSON.stringify({ vehicle_registration: plate() }),
            }
          : { headers: auth };
      const target =
        kind === 'list'
          ? '/api/v1/claims?limit=25'
          : kind === 'search'
            ? '/api/v1/claims/search-by-plate'
            : `/api/v1/imports/${upload.importId}`;
      const sentIn = phase;
      const t0 = performance.now();
      const p = fetch(`${url}${target}`, { ...init, signal: AbortSignal.timeout(60_000) })
        .then(async (r) => ({ ok: r.ok, body: await r.arrayBuffer() }))
        .then(
          (r) => void samples.push({ kind, phase: sentIn, at: t0, ms: performance.now() - t0, ok: r.ok }),
          () => void samples.push({ kind, phase: sentIn, at: t0, ms: performance.now() - t0, ok: false }),
        );
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
    };
    let turn = 0;
    const kinds = (): Kind[] => (upload.importId ? ['list', 'search', 'status'] : ['list', 'search']);
    const ticker = setInterval(() => {
      const k = kinds();
      send(k[turn++ % k.length]!);
    }, INTERVAL_MS);

    // A new process compiles its hot code over its first few thousand requests: those go first, in
    // turn, and the warm-up's own probes are left out.
    for (let i = 0; i < 2000; i++) {
      const kind: Kind = i % 2 === 0 ? 'search' : 'list';
      await fetch(`${url}${kind === 'search' ? '/api/v1/claims/search-by-plate' : '/api/v1/claims?limit=25'}`, {
        ...(kind === 'search'
          ? {
              method: 'POST',
              headers: { ...auth, 'content-type': 'application/json' },
              body: JSON.stringify({ vehicle_registration: plate() }),
            }
          : { headers: auth }),
      }).then((r) => r.arrayBuffer());
    }
    await sleep(WARMUP_S * 1000);
    phase = 'idle';
    await sleep(IDLE_S * 1000);
    let copySeconds: number | undefined;
    if (dbUrl) {
      // The database's own bulk load of the same rows, rolled back: the registry stays as seeded.
      phase = 'copy';
      const sql = postgres(dbUrl, { max: 1, onnotice: () => {} });
      const t0 = performance.now();
      await sql
        .begin(async (tx) => {
          await copyRows(tx, file, String(company.id));
          copySeconds = (performance.now() - t0) / 1000;
          throw new Rollback();
        })
        .catch((err: unknown) => {
          if (!(err instanceof Rollback)) throw err;
        });
      await sql.end({ timeout: 5 });
      phase = 'pause'; // left out of the figures: the database settles after the load
      await sleep(2000);
    }
    phase = 'import';
    const started = performance.now();
    const form = new FormData();
    form.append('file', await fs.openAsBlob(file), 'probe.csv');
    const res = await fetch(`${url}/api/v1/claims/import`, { method: 'POST', headers: { ...auth, prefer: 'respond-async' }, body: form });
    const body = (await res.json()) as { data?: { id: string } };
    if (res.status !== 202 || !body.data) throw new Error(`the upload answered ${res.status}`);
    const importId = body.data.id;
    upload.importId = importId;
    let status = 'queued';
    let summary = '';
    while (status === 'queued' || status === 'processing') {
      await sleep(250);
      const r = await fetch(`${url}/api/v1/imports/${importId}`, { headers: auth });
      const d = ((await r.json()) as { data: { status: string; message: string | null } }).data;
      status = d.status;
      summary = d.message ?? '';
    }
    const seconds = (performance.now() - started) / 1000;
    phase = 'after';
    await sleep(IDLE_S * 1000);
    clearInterval(ticker);
    if (process.env.PROBE_DUMP) fs.writeFileSync(process.env.PROBE_DUMP, JSON.stringify(samples));
    await Promise.allSettled([...inFlight]);

    console.log(
      `${dbUrl ? `PostgreSQL (${shape.claims.toLocaleString('en')} claims seeded), import in the server's process` : 'Embedded mode (PGlite)'}, ` +
        `${stats.rows} rows, ${(stats.bytes / 1048576).toFixed(1)} MB, ${os.cpus().length} cores, Node ${process.version}`,
    );
    if (copySeconds !== undefined) console.log(`COPY of the same rows (rolled back): ${copySeconds.toFixed(1)} s`);
    console.log(`import: ${status} in ${seconds.toFixed(1)} s (upload to completed): ${summary}`);
    console.log(`server peak RSS (VmHWM): ${peakRssMb(server.pid!).toFixed(0)} MB`);
    console.log(`requests, one every ${INTERVAL_MS} ms in turn:`);
    const sorted = (kind: Kind, p: Phase) =>
      samples
        .filter((s) => s.kind === kind && s.phase === p)
        .map((s) => s.ms)
        .sort((a, b) => a - b);
    for (const p of ['idle', 'copy', 'import', 'after'] as Phase[]) {
      for (const kind of ['list', 'search', 'status'] as Kind[]) {
        const xs = samples.filter((s) => s.kind === kind && s.phase === p);
        if (xs.length === 0) continue;
        const ms = sorted(kind, p);
        const f = (v: number) => v.toFixed(1).padStart(7);
        console.log(
          `  ${p.padEnd(6)} ${kind.padEnd(6)}  p50 ${f(quantile(ms, 0.5))} ms  p99 ${f(quantile(ms, 0.99))} ms  max ${f(ms.at(-1)!)} ms  (n=${xs.length}, errors ${xs.filter((s) => !s.ok).length})`,
        );
      }
    }
    const idleP99 = quantile(sorted('search', 'idle'), 0.99);
    console.log(
      `search p99 idle before ÷ idle after: ${(idleP99 / quantile(sorted('search', 'after'), 0.99)).toFixed(2)} (near 1: a steady machine)`,
    );
    for (const p of ['copy', 'import'] as Phase[]) {
      const during = sorted('search', p);
      if (during.length > 0) console.log(`search p99 during the ${p} ÷ idle: ${(quantile(during, 0.99) / idleP99).toFixed(2)}`);
    }
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
  }
}

try {
  await run();
} finally {
  fs.rmSync(work, { recursive: true, force: true });
  await pgAdmin?.unsafe(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await pgAdmin?.end({ timeout: 5 });
}
