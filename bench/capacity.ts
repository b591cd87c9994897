/**
 * Capacity model: what one plate search, one claim submission and one imported row cost, and what
 * a registry of a given size therefore needs (docs/capacity.md).
 *
 *   npm run bench:capacity
 *
 * Creates a throw-away database (dropped at the end), seeds it as bench:api does, and starts the
 * service as `npm start` starts it (no REDIS_URL: imports run on the server's import thread), with
 * its HTTP and its PostgreSQL traffic each through a byte-counting proxy (bench/byte-proxy.ts, a
 * process of its own). Then, bounded, on 127.0.0.1 only:
 *
 * 1. warm-up, then BENCH_IDLE_SECONDS idle: the background (token revocation polling, outbox) per
 *    second, subtracted from every phase below;
 * 2. plate searches and then submissions (70% a person on record), BENCH_CONNECTIONS connections
 *    for BENCH_SECONDS each; then one CSV import of BENCH_IMPORT_ROWS rows;
 * 3. for each: CPU ms per operation of the API process (/proc/<pid>/stat utime + stime, all its
 *    threads), of this database's PostgreSQL backends, of the cluster's other processes (WAL
 *    writer, checkpointer… and, on a shared machine, other people's work) and of the load generator
 *    itself; HTTP and PostgreSQL protocol bytes per operation; then heap and index bytes per claim
 *    and per look-up (and on `perf_proj` when that database exists);
 * 4. the model (bench/capacity-model.ts) for four scales, with the first bottleneck of each;
 * 5. the check: predicted and measured searches per second with one and then two API processes
 *    (each on its own port, no proxies, the load split across them).
 *
 * Knobs: BENCH_DATABASE_URL (postgres://postgres@127.0.0.1:5432/test: where the throw-away
 * database is created), BENCH_SEED_CLAIMS (200000), BENCH_SECONDS (10, at most 20),
 * BENCH_CONNECTIONS (32), BENCH_IMPORT_ROWS (30000), BENCH_IDLE_SECONDS (5), BENCH_OUT (servers'
 * logs; default <tmp>/claims-capacity).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import autocannon from 'autocannon';
import postgres from 'postgres';

import { generateCsv } from '../scripts/gen-csv';
import { loadConfig } from '../src/config';
import { openDeps } from '../src/startup';
import { todayIn } from '../src/domain/dates';
import { answering, freePort, kill, ROOT, startScript, type Child } from '../test/processes';

import { MODEL, SCALES, sizeScale, type Storage } from './capacity-model';
import { addDays, seedRegistry, seedShape } from './seed';

const baseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const seedClaims = Number(process.env.BENCH_SEED_CLAIMS ?? 200_000);
const seconds = Math.min(20, Number(process.env.BENCH_SECONDS ?? 10));
const idleSeconds = Math.min(20, Number(process.env.BENCH_IDLE_SECONDS ?? 5));
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const importRows = Number(process.env.BENCH_IMPORT_ROWS ?? 30_000);
const outDir = path.resolve(process.env.BENCH_OUT ?? path.join(os.tmpdir(), 'claims-capacity'));
const warmup = 3;
const cores = os.availableParallelism();
const dbName = `claims_capacity_${randomBytes(4).toString('hex')}`;
const key = randomBytes(32).toString('base64url');
const sessionSecret = randomBytes(32).toString('base64url');
const clockTick = 1000 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim() || 100);

const shape = seedShape(seedClaims);
const { persons, plates, plate, birthDate } = shape;
const dbUrl = baseUrl.replace(/\/[^/]*$/u, `/${dbName}`);
const dbPort = Number(new URL(baseUrl).port || 5432);
const admin = postgres(baseUrl, { max: 1, onnotice: () => {} });
const proxies: ChildProcess[] = [];
const servers: Child[] = [];

// ---- CPU time from /proc -------------------------------------------------------------------------

/** utime + stime of a process (all its threads) in ms, and its parent; null once it is gone. */
function procStat(pid: number): { cpu: number; ppid: number } | null {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return { cpu: (Number(fields[11]) + Number(fields[12])) * clockTick, ppid: Number(fields[1]) };
  } catch {
    return null;
  }
}

function readCmdline(pid: number): string | null {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/gu, ' ');
  } catch {
    return null;
  }
}

/**
 * The PostgreSQL cluster's processes (children of the postmaster), sampled every 250 ms so that a
 * backend that exits between two snapshots keeps the CPU it used: `ours` are this database's
 * backends (their command line names it), `rest` everything else the cluster runs.
 */
function pgSampler(postmaster: number) {
  const seen = new Map<number, { cpu: number; ours: boolean }>();
  let samplingMs = 0;
  const scan = () => {
    const t0 = process.cpuUsage();
    for (const name of fs.readdirSync('/proc')) {
      const pid = Number(name);
      if (!Number.isInteger(pid)) continue;
      const known = seen.get(pid);
      const stat = procStat(pid);
      if (!stat || stat.ppid !== postmaster) continue;
      if (known) known.cpu = stat.cpu;
      else {
        const cmd = readCmdline(pid);
        if (cmd !== null) seen.set(pid, { cpu: stat.cpu, ours: cmd.split(/\s+/u).includes(dbName) });
      }
    }
    const used = process.cpuUsage(t0);
    samplingMs += (used.user + used.system) / 1000;
  };
  scan();
  // A process first seen later started after this point: all its CPU counts (base 0).
  const base = new Map([...seen].map(([pid, s]) => [pid, s.cpu]));
  const timer = setInterval(scan, 250);
  return {
    snapshot() {
      scan();
      let ours = 0;
      let rest = 0;
      for (const [pid, s] of seen) {
        const used = s.cpu - (base.get(pid) ?? 0);
        if (s.ours) ours += used;
        else rest += used;
      }
      return { ours, rest, samplingMs };
    },
    stop: () => clearInterval(timer),
  };
}

// ---- processes -------------------------------------------------------------------------------------

type Counts = { up: number; down: number; connections: number };
type Proxy = { port: number; counts(): Promise<Counts> };

async function startProxy(targetPort: number): Promise<Proxy> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench/byte-proxy.ts'), String(targetPort)], {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  proxies.push(child);
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m) => resolve((m as { port: number }).port));
    child.once('exit', () => reject(new Error('the byte proxy exited at start')));
  });
  return {
    port,
    counts: () =>
      new Promise<Counts>((resolve) => {
        child.once('message', (m) => resolve(m as Counts));
        child.send('counts');
      }),
  };
}

async function startApi(name: string, databaseUrl: string, port: number): Promise<Child> {
  const child = startScript(
    'start',
    {
      DATABASE_URL: databaseUrl,
      DOCUMENT_HASH_KEY: key,
      SESSION_SECRET: sessionSecret,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      DB_POOL_SIZE: '10',
      DATA_DIR: path.join(outDir, `data-${name}`),
    },
    { logFile: path.join(outDir, `${name}.log`) },
  );
  servers.push(child);
  await answering(child, `http://127.0.0.1:${port}`);
  return child;
}

// ---- load ------------------------------------------------------------------------------------------

const claimDate = addDays(todayIn('UTC'), -30);
let submitted = 0;
const bodies = {
  search: () => JSON.stringify({ vehicle_registration: plate(Math.floor(Math.random() * plates)) }),
  submit: () => {
    submitted++;
    // 70% a person on record (their passport and date of birth), 30% a new person.
    const known = Math.random() < 0.7;
    const p = known ? Math.floor(Math.random() * persons) : `NEW${randomBytes(6).toString('hex')}`;
    return JSON.stringify({
      client: {
        first_name: 'Bench',
        last_name: `Person ${p}`,
        date_of_birth: known ? birthDate(p as number) : '1980-01-01',
        id_documents: [{ type: 'passport', number: `BENCH${p}` }],
      },
      claim_date: claimDate,
      vehicle_registration: plate(submitted % plates),
      claim_type: 'accident',
      amount: 1250,
      is_at_fault: false,
    });
  },
};
const paths = { search: '/api/v1/claims/search-by-plate', submit: '/api/v1/claims' };
let token = '';

async function load(ports: number[], mode: 'search' | 'submit', duration: number) {
  const runs = await Promise.all(
    ports.map((port) =>
      autocannon({
        url: `http://127.0.0.1:${port}${paths[mode]}`,
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json' },
        connections: Math.max(1, Math.round(connections / ports.length)),
        duration,
        requests: [{ setupRequest: (req) => ({ ...req, body: bodies[mode]() }) }],
      }),
    ),
  );
  const total = runs.reduce((s, r) => s + r.requests.total, 0);
  const bad = runs.reduce((s, r) => s + r.non2xx + r.errors + r.timeouts, 0);
  if (bad > 0) console.log(`  warning: ${mode}: ${bad} non-2xx/errors/timeouts`);
  return { total, rps: total / duration, p99: Math.max(...runs.map((r) => r.latency.p99)) };
}

// ---- measurement -----------------------------------------------------------------------------------

type Snap = { at: number; api: number; ours: number; rest: number; client: number; http: Counts; db: Counts };
type Cost = {
  ops: number;
  rate: number;
  p99?: number;
  api: number;
  db: number;
  rest: number;
  client: number;
  httpUp: number;
  httpDown: number;
  dbUp: number;
  dbDown: number;
};
const zero: Counts = { up: 0, down: 0, connections: 0 };

function measurer(pg: ReturnType<typeof pgSampler>, apiPids: () => number[], httpProxy?: Proxy, dbProxy?: Proxy) {
  let idle = { api: 0, ours: 0, rest: 0, dbUp: 0, dbDown: 0 }; // per second
  const snap = async (): Promise<Snap> => {
    const p = pg.snapshot();
    const c = process.cpuUsage();
    return {
      at: performance.now(),
      api: apiPids().reduce((s, pid) => s + (procStat(pid)?.cpu ?? 0), 0),
      ours: p.ours,
      rest: p.rest,
      // The load generator: this process, less the time spent sampling /proc.
      client: (c.user + c.system) / 1000 - p.samplingMs,
      http: (await httpProxy?.counts()) ?? zero,
      db: (await dbProxy?.counts()) ?? zero,
    };
  };
  /** Runs `work`, returns its cost per operation with the idle background subtracted. */
  const measure = async (work: () => Promise<{ ops: number; p99?: number; seconds?: number }>): Promise<Cost> => {
    const a = await snap();
    const { ops, p99, seconds: busy } = await work();
    const b = await snap();
    const s = (b.at - a.at) / 1000;
    const per = (v: number) => Math.max(0, v) / Math.max(1, ops);
    return {
      ops,
      rate: ops / (busy ?? s),
      ...(p99 !== undefined ? { p99 } : {}),
      api: per(b.api - a.api - idle.api * s),
      db: per(b.ours - a.ours - idle.ours * s),
      rest: per(b.rest - a.rest - idle.rest * s),
      client: per(b.client - a.client),
      httpUp: per(b.http.up - a.http.up),
      httpDown: per(b.http.down - a.http.down),
      dbUp: per(b.db.up - a.db.up - idle.dbUp * s),
      dbDown: per(b.db.down - a.db.down - idle.dbDown * s),
    };
  };
  const calibrateIdle = async (secs: number) => {
    const a = await snap();
    await sleep(secs * 1000);
    const b = await snap();
    const s = (b.at - a.at) / 1000;
    idle = {
      api: (b.api - a.api) / s,
      ours: (b.ours - a.ours) / s,
      rest: (b.rest - a.rest) / s,
      dbUp: (b.db.up - a.db.up) / s,
      dbDown: (b.db.down - a.db.down) / s,
    };
    return idle;
  };
  return { measure, calibrateIdle };
}

// ---- storage ---------------------------------------------------------------------------------------

const TABLES = ['claims', 'clients', 'identity_documents', 'alerts', 'claim_status_changes', 'lookups'];
type Sizes = { tables: Record<string, { rows: number; heap: number; index: number }>; written: number };

async function sizes(url: string): Promise<Sizes> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const tables: Sizes['tables'] = {};
    for (const t of TABLES) {
      const [r] = await sql.unsafe<{ rows: string; heap: string; index: string }[]>(
        `SELECT (SELECT count(*) FROM ${t}) AS rows, pg_table_size('${t}') AS heap, pg_indexes_size('${t}') AS index`,
      );
      tables[t] = { rows: Number(r!.rows), heap: Number(r!.heap), index: Number(r!.index) };
    }
    // Claims the service wrote (the seed's are 'assisted'): only those have alerts and status changes.
    const [w] = await sql<{ n: string }[]>`SELECT count(*) AS n FROM claims WHERE source IN ('api', 'bulk_import')`;
    return { tables, written: Number(w!.n) };
  } finally {
    await sql.end();
  }
}

/**
 * Bytes per claim: the claim with its share of persons and documents (over all claims), and the
 * alerts and status changes per claim the service wrote (`extra`: the seed writes none); per look-up.
 */
function perRecord({ tables: t, written }: Sizes) {
  const claims = Math.max(1, t.claims!.rows);
  const base = (k: 'heap' | 'index') => (t.claims![k] + t.clients![k] + t.identity_documents![k]) / claims;
  const extra = (k: 'heap' | 'index') => (written > 0 ? (t.alerts![k] + t.claim_status_changes![k]) / written : 0);
  const lookups = t.lookups!.rows;
  return {
    claims: t.claims!.rows,
    base: { heap: base('heap'), index: base('index') },
    extra: { heap: extra('heap'), index: extra('index') },
    lookups,
    lookup: { heap: lookups > 0 ? t.lookups!.heap / lookups : 0, index: lookups > 0 ? t.lookups!.index / lookups : 0 },
  };
}
type RecordBytes = ReturnType<typeof perRecord>;

function model(c: { search: Cost; submit: Cost; row: Cost }, rec: Storage, connsPerProcess: number, maxConns: number) {
  const m = MODEL;
  const min = m.minimal;
  console.log(
    `\nmodel: U = ${m.utilisation}; ${m.apiShare * 100}% of claims by the API (peak hour ${m.submitPeak}× the working hours' mean), ` +
      `the rest by CSV in a ${m.importWindowSeconds / 3600} h window each working day; claims kept ${m.retentionYears} y, look-ups ${m.lookupRetentionYears} y; ` +
      `minimal deployment: ${min.api} API process, ${min.workers} worker, database ${min.dbCores} cores, ${min.dbRamGb} GB, ${min.dbDiskGb} GB disk`,
  );
  console.log(
    'scale            insurers  claims/yr search/s | API procs (cores) workers DB cores  DB conns  DB GB: claims + look-ups | first bottleneck',
  );
  for (const sc of SCALES) {
    const r = sizeScale(sc, c, rec, connsPerProcess, maxConns);
    const verdict =
      r.first.ratio >= 1
        ? `${r.first.name}, ${r.first.ratio.toFixed(1)}× the minimal`
        : `none; nearest ${r.first.name} at ${Math.round(r.first.ratio * 100)}%`;
    console.log(
      `${sc.name.padEnd(16)} ${String(sc.insurers).padStart(8)} ${sc.claimsPerYear.toLocaleString('en').padStart(10)} ${String(sc.searchesPerSecond).padStart(8)} | ` +
        `${`${r.apiProcs} (${r.apiCores.toFixed(2)})`.padStart(17)} ${String(r.workers).padStart(7)} ${r.dbCores.toFixed(2).padStart(8)} ${`${r.conns}/${maxConns}`.padStart(9)} ` +
        `${`${r.claimGb.toFixed(1)} + ${r.lookupGb.toFixed(1)}`.padStart(25)} | ${verdict}`,
    );
  }
}

// ---- run -------------------------------------------------------------------------------------------

const f1 = (v: number) => v.toFixed(2);
const whole = (v: number) => Math.round(v).toLocaleString('en');
function costRow(label: string, c: Cost) {
  console.log(
    `${label.padEnd(15)} ${Math.round(c.rate).toLocaleString('en').padStart(8)} ${f1(c.api).padStart(7)} ${f1(c.db).padStart(7)} ${f1(c.rest).padStart(7)} ${f1(c.client).padStart(7)} | ` +
      `${whole(c.httpUp).padStart(8)} ${whole(c.httpDown).padStart(8)} ${whole(c.dbUp).padStart(8)} ${whole(c.dbDown).padStart(8)}`,
  );
}

/** One process runs its JavaScript on one core; the machine's cores are shared by everything measured. */
function predict(processes: number, c: Cost) {
  const perProcess = (processes * 1000) / c.api;
  const machine = (cores * 1000) / (c.api + c.db + c.rest + c.client);
  return perProcess < machine
    ? { rps: perProcess, bottleneck: `the API process${processes > 1 ? 'es' : ''}' core${processes > 1 ? 's' : ''}` }
    : { rps: machine, bottleneck: `the machine's ${cores} cores (API + PostgreSQL + load generator)` };
}

let pg: ReturnType<typeof pgSampler> | undefined;
try {
  fs.mkdirSync(outDir, { recursive: true });
  await admin.unsafe(`CREATE DATABASE ${dbName}`);
  const deps = await openDeps(loadConfig({ DATABASE_URL: dbUrl, DOCUMENT_HASH_KEY: key, DB_POOL_SIZE: '2', LOG_LEVEL: 'silent' }));
  const company = await deps.companies.createCompany('Capacity Insurance');
  const other = await deps.companies.createCompany('Other Insurance');
  token = (await deps.tokens.create(company.id, 'capacity')).token;
  console.log(
    `seeding ${seedClaims.toLocaleString('en')} claims, ${persons.toLocaleString('en')} persons, ${plates.toLocaleString('en')} plates…`,
  );
  await seedRegistry(deps.db, shape, { companyId: company.id, otherCompanyId: other.id, hashKey: key });
  await deps.close();

  const [settings] = await admin<{ backend: number; maxConns: number }[]>`
    SELECT pg_backend_pid() AS backend, current_setting('max_connections')::int AS "maxConns"`;
  const { backend, maxConns } = settings!;
  // The postmaster is the parent of every backend: the cluster's processes are its children.
  const postmaster = procStat(backend)?.ppid;
  if (postmaster === undefined)
    throw new Error("bench:capacity reads PostgreSQL's processes from /proc: run it on the database's machine (Linux)");
  pg = pgSampler(postmaster);

  // ---- per-operation costs, through the counting proxies ---------------------------------------------
  const dbProxy = await startProxy(dbPort);
  const apiPort = await freePort();
  const proxiedUrl = new URL(dbUrl);
  proxiedUrl.hostname = '127.0.0.1';
  proxiedUrl.port = String(dbProxy.port);
  const api = await startApi('api-measured', proxiedUrl.href, apiPort);
  const httpProxy = await startProxy(apiPort);
  const { measure, calibrateIdle } = measurer(pg, () => [api.pid!], httpProxy, dbProxy);

  console.log(`warm-up: ${warmup} s of searches and ${warmup} s of submissions`);
  await load([httpProxy.port], 'search', warmup);
  await load([httpProxy.port], 'submit', warmup);
  const idle = await calibrateIdle(idleSeconds);
  console.log(
    `idle background, per second (subtracted below): API ${f1(idle.api)} ms CPU, backends ${f1(idle.ours)} ms, rest of the cluster ${f1(idle.rest)} ms, ` +
      `PostgreSQL protocol ${whole(idle.dbUp)} B up / ${whole(idle.dbDown)} B down`,
  );
  const loadAvg = () =>
    os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ');
  console.log(`load average before the phases: ${loadAvg()} (on ${cores} cores)`);

  const search = await measure(async () => {
    const r = await load([httpProxy.port], 'search', seconds);
    return { ops: r.total, p99: r.p99 };
  });
  const submit = await measure(async () => {
    const r = await load([httpProxy.port], 'submit', seconds);
    return { ops: r.total, p99: r.p99 };
  });
  let csv = '';
  await generateCsv({ rows: importRows, repeat: 0.3, invalid: 0, delimiter: ',', seed: 7 }, (chunk) => (csv += chunk));
  const row = await measure(async () => {
    const t0 = performance.now();
    const form = new FormData();
    form.append('file', new Blob([csv], { type: 'text/csv' }), 'capacity.csv');
    const res = await fetch(`http://127.0.0.1:${httpProxy.port}/api/v1/claims/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
      body: form,
    });
    const summary = (await res.json()) as { imported?: number; failed?: number };
    if (res.status !== 200) throw new Error(`the import answered ${res.status}: ${JSON.stringify(summary)}`);
    const busy = (performance.now() - t0) / 1000;
    // The alerts of the imported claims are found once the import completes: their cost is the rows'.
    await sleep(2000);
    return { ops: (summary.imported ?? 0) + (summary.failed ?? 0), seconds: busy };
  });
  const [activity] = await admin<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = ${dbName}`;
  const connsPerProcess = activity!.n;

  console.log(
    `\nper operation (CPU in ms, bytes on the wire; ${connections} connections, ${seconds} s per phase, import of ${importRows.toLocaleString('en')} rows)`,
  );
  console.log('operation          ops/s  API cpu  DB cpu cluster  client |  HTTP up HTTP dn   PG up    PG dn');
  costRow('plate search', search);
  costRow('submission', submit);
  costRow('imported row', row);
  console.log(
    `(search p99 ${search.p99} ms, submission p99 ${submit.p99} ms; DB cpu: this database's backends; cluster: the other PostgreSQL processes)`,
  );
  console.log(`PostgreSQL connections of one API process after the load: ${connsPerProcess} (max_connections ${maxConns})`);

  const s = await sizes(dbUrl);
  console.log('\ntable                       rows      heap MB  index MB');
  for (const t of TABLES) {
    const r = s.tables[t]!;
    console.log(
      `${t.padEnd(22)} ${r.rows.toLocaleString('en').padStart(10)} ${(r.heap / 1e6).toFixed(1).padStart(11)} ${(r.index / 1e6).toFixed(1).padStart(9)}`,
    );
  }
  console.log(`claims written by the service (submissions and the import): ${s.written.toLocaleString('en')}`);
  const own = perRecord(s);
  const show = (label: string, r: RecordBytes) =>
    console.log(
      `${label}: per claim ${whole(r.base.heap)} B heap + ${whole(r.base.index)} B indexes (claims with their share of persons and documents, over ${r.claims.toLocaleString('en')} claims)` +
        (r.lookups >= 1000
          ? `; per look-up ${whole(r.lookup.heap)} + ${whole(r.lookup.index)} B (${r.lookups.toLocaleString('en')} look-ups)`
          : ''),
    );
  show('this database', own);
  console.log(
    `alerts and status changes per claim the service wrote: ${whole(own.extra.heap)} B heap + ${whole(own.extra.index)} B indexes`,
  );
  // The 1M-claim benchmark database, when there, gives the per-claim bytes of a full registry.
  const [perfProj] = await admin`SELECT 1 FROM pg_database WHERE datname = 'perf_proj'`;
  const full = perfProj ? perRecord(await sizes(baseUrl.replace(/\/[^/]*$/u, '/perf_proj'))) : own;
  if (perfProj) show('perf_proj', full);
  const rec: Storage = {
    claimHeap: full.base.heap + own.extra.heap,
    claimIndex: full.base.index + own.extra.index,
    lookupHeap: own.lookup.heap,
    lookupIndex: own.lookup.index,
  };
  console.log(
    `the model uses: per claim ${whole(rec.claimHeap + rec.claimIndex)} B (${perfProj ? 'perf_proj' : 'this database'} + alerts), per look-up ${whole(rec.lookupHeap + rec.lookupIndex)} B`,
  );

  model({ search, submit, row }, rec, connsPerProcess, maxConns);

  await kill(api, 'SIGTERM');
  for (const child of proxies) child.kill('SIGTERM');

  // ---- the check: one and two API processes, no proxies ------------------------------------------------
  console.log(`\ncheck: plate searches per second, ${connections} connections split across the processes, ${seconds} s, no proxies`);
  console.log('processes  predicted  measured  measured/predicted  predicted bottleneck');
  const ports = [await freePort(), await freePort()];
  const checkApis = [await startApi('api-1', dbUrl, ports[0]!)];
  const check = measurer(pg, () => checkApis.map((c) => c.pid!));
  for (const n of [1, 2]) {
    if (n === 2) checkApis.push(await startApi('api-2', dbUrl, ports[1]!));
    await load(ports.slice(0, n), 'search', warmup);
    const p = predict(n, search);
    const m = await check.measure(async () => {
      const r = await load(ports.slice(0, n), 'search', seconds);
      return { ops: r.total, p99: r.p99 };
    });
    // How much of the machine the measured processes had: well under all its cores, and something else ran.
    const busy = (m.rate * (m.api + m.db + m.rest + m.client)) / 1000;
    console.log(
      `${String(n).padStart(9)} ${Math.round(p.rps).toLocaleString('en').padStart(10)} ${Math.round(m.rate).toLocaleString('en').padStart(9)} ${(m.rate / p.rps).toFixed(2).padStart(19)}  ${p.bottleneck}; ` +
        `measured: API ${f1(m.api)} + DB ${f1(m.db)} + cluster ${f1(m.rest)} + client ${f1(m.client)} ms a search, ${busy.toFixed(2)} of ${cores} cores`,
    );
  }
  console.log(`load average after: ${loadAvg()}. Servers' logs: ${outDir}`);
} finally {
  pg?.stop();
  for (const child of servers) await kill(child, 'SIGTERM');
  for (const child of proxies) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  await admin.unsafe(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
}
