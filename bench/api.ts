/**
 * API benchmark on PostgreSQL: the service beside a bare Fastify route running the same SQL.
 *
 *   npm run bench:api
 *
 * Creates a throw-away database, migrates it, seeds it set-based (BENCH_SEED_CLAIMS claims,
 * default 200,000, over plates and persons as a real registry would have them: every fifth claim
 * a new person with one passport, claim dates over the last 5 years), then starts two processes
 * on 127.0.0.1:
 *
 * - the service, `node --import tsx src/main-api.ts` (pool 10), with an API token;
 * - bench/bare-server.ts: the same search statement and a plain submit route (one round trip per
 *   statement in a transaction, read-back included), without token check, validation rules,
 *   idempotency or logging.
 *
 * For each round it runs autocannon (BENCH_CONNECTIONS connections, 3 s warm-up, then
 * BENCH_SECONDS) against the service and then the bare server, for the plate search and for
 * submissions (70% a person already on record, 30% a new one), and prints req/s, p99 and the
 * ratios service/bare; with several rounds, the medians. The service's resident memory (RSS) is
 * printed after each run.
 *
 * BENCH_SOAK_SECONDS > 0 then runs a soak: search and submissions in turn at half the service's
 * measured search rate, sampling the service's RSS every 10 s (BENCH_HEAP_SNAPSHOT=1 also writes a
 * heap snapshot of the service at the end, into BENCH_OUT). The database is dropped at the end.
 *
 * Knobs: BENCH_DATABASE_URL (postgres://postgres@127.0.0.1:5432/test: where the throw-away
 * database is created), BENCH_SEED_CLAIMS (200000), BENCH_SECONDS (15), BENCH_CONNECTIONS (32),
 * BENCH_ROUNDS (1), BENCH_CASES ("search submit"), BENCH_SOAK_SECONDS (0), BENCH_HEAP_SNAPSHOT,
 * BENCH_OUT (the servers' logs and profiles; default <tmp>/claims-bench), BENCH_CPU_PROF=1 (a CPU profile of each server, into BENCH_OUT).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import autocannon from 'autocannon';
import postgres from 'postgres';

import { loadConfig } from '../src/config';
import { openDeps } from '../src/startup';
import { todayIn } from '../src/domain/dates';

import { benchNodeFlags, NEVER_TRIPPING_LIMITS } from './bench-process';
import { addDays, seedRegistry, seedShape } from './seed';

const baseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const seedClaims = Number(process.env.BENCH_SEED_CLAIMS ?? 200_000);
const seconds = Number(process.env.BENCH_SECONDS ?? 15);
const warmup = 3;
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const rounds = Number(process.env.BENCH_ROUNDS ?? 1);
const cases = (process.env.BENCH_CASES ?? 'search submit').split(/\s+/u).filter(Boolean) as ('search' | 'submit')[];
const soakSeconds = Number(process.env.BENCH_SOAK_SECONDS ?? 0);
const heapSnapshot = process.env.BENCH_HEAP_SNAPSHOT === '1';
const cpuProfile = process.env.BENCH_CPU_PROF === '1';
const outDir = path.resolve(process.env.BENCH_OUT ?? path.join(os.tmpdir(), 'claims-bench'));
const dbName = `claims_bench_${randomBytes(4).toString('hex')}`;
const key = randomBytes(32).toString('base64url');
const sessionSecret = randomBytes(32).toString('base64url');

const shape = seedShape(seedClaims);
const { persons, plates, plate, birthDate } = shape;

const admin = postgres(baseUrl, { max: 1, onnotice: () => {} });
await admin.unsafe(`CREATE DATABASE ${dbName}`);
const url = baseUrl.replace(/\/[^/]*$/u, `/${dbName}`);
const children: ChildProcess[] = [];

function start(name: string, args: string[], env: Record<string, string>): ChildProcess {
  fs.mkdirSync(outDir, { recursive: true });
  const log = fs.openSync(path.join(outDir, `${name}.log`), 'w');
  const child = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', log, log],
  });
  fs.closeSync(log);
  children.push(child);
  return child;
}

async function ready(child: ChildProcess, url: string, name: string): Promise<void> {
  for (let i = 0; i < 120; i++) {
    if (child.exitCode !== null) break;
    if (
      await fetch(url).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await sleep(500);
  }
  throw new Error(`${name} did not become ready; see ${path.join(outDir, `${name}.log`)}`);
}

/** Resident memory of a process in MB (Linux), or null elsewhere. */
function rssMb(pid: number | undefined, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number | null {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'mu').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : null;
  } catch {
    return null;
  }
}

/** CPU time (user + system) a process has used so far, in ms (Linux), or null elsewhere. */
function cpuMs(pid: number | undefined): number | null {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, in clock ticks of 10 ms
  } catch {
    return null;
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
const freePort = () => 20_000 + Math.floor(Math.random() * 40_000);

try {
  // ---- database, company, token, seed ------------------------------------------------------------
  const deps = await openDeps(loadConfig({ DATABASE_URL: url, DOCUMENT_HASH_KEY: key, DB_POOL_SIZE: '2', LOG_LEVEL: 'silent' }));
  const company = await deps.companies.createCompany('Bench Insurance');
  const other = await deps.companies.createCompany('Other Insurance');
  const { token } = await deps.tokens.create(company.id, 'bench');
  console.log(
    `seeding ${seedClaims.toLocaleString('en')} claims, ${persons.toLocaleString('en')} persons, ${plates.toLocaleString('en')} plates…`,
  );
  await seedRegistry(deps.db, shape, { companyId: company.id, otherCompanyId: other.id, hashKey: key });
  await deps.close();

  // ---- the two servers ------------------------------------------------------------------------------
  const projPort = freePort();
  const barePort = freePort();
  const profFlags = (name: string) => (cpuProfile ? ['--cpu-prof', `--cpu-prof-dir=${path.join(outDir, `prof-${name}`)}`] : []);
  const project = start(
    'service',
    [
      ...(heapSnapshot ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${outDir}`] : []),
      ...profFlags('service'),
      ...benchNodeFlags(),
      '--import',
      'tsx',
      'src/main-api.ts',
    ],
    {
      DATABASE_URL: url,
      DOCUMENT_HASH_KEY: key,
      SESSION_SECRET: sessionSecret,
      PORT: String(projPort),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      DB_POOL_SIZE: '10',
      DATA_DIR: path.join(outDir, 'data'),
      ...NEVER_TRIPPING_LIMITS,
    },
  );
  const bare = start('bare', [...profFlags('bare'), '--import', 'tsx', 'bench/bare-server.ts'], {
    DATABASE_URL: url,
    DOCUMENT_HASH_KEY: key,
    PORT: String(barePort),
    COMPANY_ID: company.id,
    DB_POOL_SIZE: '10',
  });
  await ready(project, `http://127.0.0.1:${projPort}/readyz`, 'service');
  await ready(bare, `http://127.0.0.1:${barePort}/healthz`, 'bare');

  // ---- load -----------------------------------------------------------------------------------------
  const claimDate = addDays(todayIn('UTC'), -30);
  let n = 0;
  const bodies = {
    search: () => JSON.stringify({ vehicle_registration: plate(Math.floor(Math.random() * plates)) }),
    submit: () => {
      n++;
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
        vehicle_registration: plate(n % plates),
        claim_type: 'accident',
        amount: 1250,
        is_at_fault: false,
      });
    },
  };
  const targets = {
    service: { base: `http://127.0.0.1:${projPort}`, paths: { search: '/api/v1/claims/search-by-plate', submit: '/api/v1/claims' } },
    bare: { base: `http://127.0.0.1:${barePort}`, paths: { search: '/search', submit: '/submit' } },
  };
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json' };

  /** cpu: the server's CPU time per request in ms, a figure other work on the machine disturbs less than req/s. */
  type Figure = { rps: number; p50: number; p99: number; bad: number; cpu: number };
  const pids = { service: project.pid, bare: bare.pid };
  const load = async (target: keyof typeof targets, mode: 'search' | 'submit', duration: number, overallRate?: number): Promise<Figure> => {
    const cpuBefore = cpuMs(pids[target]);
    const r = await autocannon({
      url: targets[target].base + targets[target].paths[mode],
      method: 'POST',
      headers,
      connections,
      duration,
      ...(overallRate ? { overallRate } : {}),
      requests: [{ setupRequest: (req) => ({ ...req, body: bodies[mode]() }) }],
    });
    const cpuAfter = cpuMs(pids[target]);
    const cpu = cpuBefore !== null && cpuAfter !== null && r.requests.total > 0 ? (cpuAfter - cpuBefore) / r.requests.total : Number.NaN;
    return { rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, bad: r.non2xx + r.errors + r.timeouts, cpu };
  };

  const results: Record<string, { service: Figure; bare: Figure }[]> = { search: [], submit: [] };
  const ratio = (a: number, b: number) => (b > 0 ? (a / b).toFixed(2) : 'n/a');
  const row = (label: string, s: Figure, b: Figure) =>
    console.log(
      `${label.padEnd(8)} | ${String(s.rps).padStart(7)} ${String(s.p99).padStart(6)} ${s.cpu.toFixed(2).padStart(6)} | ${String(b.rps).padStart(7)} ${String(b.p99).padStart(6)} ${b.cpu.toFixed(2).padStart(6)} | ${ratio(s.rps, b.rps).padStart(9)} ${ratio(s.p99, b.p99).padStart(9)} ${ratio(s.cpu, b.cpu).padStart(9)}`,
    );
  console.log(
    `\n${connections} connections, ${warmup} s warm-up + ${seconds} s per run; one process each, pool 10; autocannon on the same machine\n`,
  );
  console.log('         |        service        |      bare route       |  service / bare route');
  console.log('case     |   req/s p99 ms cpu ms |   req/s p99 ms cpu ms |     req/s       p99 cpu/req');
  for (let round = 1; round <= rounds; round++) {
    for (const mode of cases) {
      const figures = {} as { service: Figure; bare: Figure };
      for (const target of ['service', 'bare'] as const) {
        await load(target, mode, warmup);
        figures[target] = await load(target, mode, seconds);
        if (figures[target].bad > 0) console.log(`  warning: ${target} ${mode}: ${figures[target].bad} non-2xx/errors/timeouts`);
      }
      results[mode]!.push(figures);
      row(`${mode}`, figures.service, figures.bare);
      console.log(`         | service RSS ${rssMb(project.pid)} MB (peak ${rssMb(project.pid, 'VmHWM')} MB)`);
    }
  }
  if (rounds > 1) {
    console.log(`\nmedians of ${rounds} rounds (each column on its own):`);
    for (const mode of cases) {
      const rs = results[mode]!;
      const med = (t: 'service' | 'bare', k: keyof Figure) => median(rs.map((r) => r[t][k]));
      const s = { rps: med('service', 'rps'), p50: med('service', 'p50'), p99: med('service', 'p99'), bad: 0, cpu: med('service', 'cpu') };
      const b = { rps: med('bare', 'rps'), p50: med('bare', 'p50'), p99: med('bare', 'p99'), bad: 0, cpu: med('bare', 'cpu') };
      row(mode, s, b);
      // Ratios are compared within a round (both servers under the same conditions), then the median taken.
      const medRatio = (k: 'rps' | 'p99' | 'cpu') => median(rs.map((r) => r.service[k] / r.bare[k])).toFixed(2);
      console.log(`         | median of the rounds' ratios: req/s ${medRatio('rps')}, p99 ${medRatio('p99')}, cpu/req ${medRatio('cpu')}`);
      console.log(
        `         | ratios per round: req/s ${rs.map((r) => ratio(r.service.rps, r.bare.rps)).join(', ')}; p99 ${rs.map((r) => ratio(r.service.p99, r.bare.p99)).join(', ')}`,
      );
    }
  }

  // ---- soak -----------------------------------------------------------------------------------------
  if (soakSeconds > 0) {
    const peak = results.search!.length > 0 ? median(results.search!.map((r) => r.service.rps)) : 1000;
    const rate = Math.max(1, Math.round(peak / 2));
    console.log(`\nsoak: ${soakSeconds} s at ${rate} req/s (half the measured search rate), search and submissions in turn`);
    const samples: number[] = [];
    const sample = setInterval(() => {
      const mb = rssMb(project.pid);
      if (mb !== null) samples.push(mb);
    }, 10_000);
    const slice = 30;
    for (let done = 0, i = 0; done < soakSeconds; done += slice, i++) {
      const f = await load('service', i % 2 === 0 ? 'search' : 'submit', Math.min(slice, soakSeconds - done), rate);
      console.log(
        `  ${String(done + Math.min(slice, soakSeconds - done)).padStart(5)} s  ${i % 2 === 0 ? 'search' : 'submit'} ${f.rps} req/s p99 ${f.p99} ms  RSS ${rssMb(project.pid)} MB${f.bad ? `  ${f.bad} non-2xx` : ''}`,
      );
    }
    clearInterval(sample);
    const first = samples.slice(0, Math.max(1, Math.floor(samples.length / 4)));
    const last = samples.slice(-Math.max(1, Math.floor(samples.length / 4)));
    console.log(
      `soak RSS: first quarter median ${median(first)} MB, last quarter median ${median(last)} MB, max ${Math.max(...samples)} MB, peak (VmHWM) ${rssMb(project.pid, 'VmHWM')} MB`,
    );
    if (heapSnapshot && project.pid) {
      project.kill('SIGUSR2');
      await sleep(15_000);
      console.log(`heap snapshot written to ${outDir} (Heap.*.heapsnapshot)`);
    }
  }
} finally {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(20_000)]);
    }
  }
  await admin.unsafe(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
}
