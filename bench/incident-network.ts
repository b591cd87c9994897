/**
 * GET /claims/{id}/incident and GET /claims/{id}/network under load (32 connections), against the
 * goals of issue 44 (p99 under 20 ms and under 50 ms, the look-up entry included), and the matches
 * of a claim with the two new indicators against the matches of a baseline checkout, on the same
 * database, taking turns; then EXPLAIN (ANALYZE, BUFFERS) of the statements.
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/perf_proj \
 *   BENCH_DOCUMENT_HASH_KEY=<its key> [BENCH_BASELINE_DIR=<a checkout of main, npm ci done>] npm run bench:incident-network
 *
 * On the team's seeded database (1,000,000 claims of 20 companies) it:
 * 1. takes the company BENCH_COMPANY (default "Perf Bench Insurance"), makes it a throw-away token,
 *    and picks 2,000 random claims of it and "the hot claim": its claim on the plate with the most
 *    claims. The seeded plates have at most 16 claims, so it also makes one hot plate: it adds
 *    BENCH_HOT_CLAIMS (default 5,000) claims of every company and random persons, inside the search
 *    window, on the plate of one of the company's claims ("the crowded claim"): the cap's case;
 * 2. starts `src/main-api.ts` of this checkout (and of BENCH_BASELINE_DIR, when set) on 127.0.0.1
 *    and runs autocannon, BENCH_CONNECTIONS (32) connections, 2 s warm-up then BENCH_SECONDS (10)
 *    per arm: incident and network on random claims, the hot claim and the crowded claim; matches
 *    on random claims here and on the baseline, twice each in turn;
 * 3. prints EXPLAIN (ANALYZE, BUFFERS) of the incident and network statements as the repository
 *    sends them, for a random claim and the crowded claim;
 * 4. deletes what it added (the claims, the look-ups of the run, the token) and VACUUM ANALYZE claims.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

import autocannon from 'autocannon';

import { openDb, type Db } from '../src/db/db';
import { createRegistryRepository } from '../src/db/registry-repository';
import { minusYears, todayIn } from '../src/domain/dates';
import { MAX_NETWORK_EDGES } from '../src/domain/registry/registry';
import { benchCompany, createBenchToken, deleteBenchToken, freePort, holdRetention, NEVER_TRIPPING_LIMITS } from './bench-process';

const dbUrl = process.env.BENCH_DATABASE_URL;
const key = process.env.BENCH_DOCUMENT_HASH_KEY;
if (!dbUrl || !key) {
  console.error('Set BENCH_DATABASE_URL and BENCH_DOCUMENT_HASH_KEY (see the comment at the top of bench/incident-network.ts).');
  process.exit(2);
}
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const hotClaims = Number(process.env.BENCH_HOT_CLAIMS ?? 5000);
const baselineDir = process.env.BENCH_BASELINE_DIR;

const db = await openDb({ kind: 'postgres', url: dbUrl, poolSize: 2 });
const company = await benchCompany(db, process.env.BENCH_COMPANY ?? 'Perf Bench Insurance');
const token = await createBenchToken(db, company.id, 'incident-network bench');
const releaseRetention = await holdRetention(db);
const started = new Date().toISOString();
const from = minusYears(todayIn('UTC'), 3);
const servers: ChildProcess[] = [];
let crowdedPlate: string | null = null;

function startServer(dir: string): { child: ChildProcess; base: string } {
  const port = freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main-api.ts'], {
    cwd: dir,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATABASE_URL: dbUrl,
      DOCUMENT_HASH_KEY: key,
      SESSION_SECRET: 'incident-bench-session-secret-0123456789abcdef',
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      DATA_DIR: '/tmp/incident-bench-data',
      ...NEVER_TRIPPING_LIMITS,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  servers.push(child);
  return { child, base: `http://127.0.0.1:${port}` };
}

async function ready(s: { child: ChildProcess; base: string }) {
  for (let i = 0; i < 120; i++) {
    if (s.child.exitCode !== null) throw new Error('a server exited');
    try {
      if ((await fetch(`${s.base}/healthz`)).ok) return;
    } catch {
      /* not yet */
    }
    await sleep(500);
  }
  throw new Error('a server did not start within 60 s');
}

type Result = { rps: number; p50: number; p99: number; errors: number; non2xx: number };
async function arm(base: string, paths: () => string): Promise<Result> {
  const run = (duration: number) =>
    autocannon({
      url: base,
      connections,
      duration,
      headers: { authorization: `Bearer ${token.token}`, accept: 'application/json' },
      requests: [{ setupRequest: (r: autocannon.Request) => ({ ...r, method: 'GET', path: paths() }) }],
    });
  await run(2);
  const r = await run(seconds);
  return { rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, errors: r.errors, non2xx: r.non2xx };
}

try {
  const random = (
    await db.query<{ id: string }>(
      `SELECT id FROM claims WHERE company_id = $1 AND claim_date >= $2::date ORDER BY md5(id::text) LIMIT 2000`,
      [company.id, from],
    )
  ).map((r) => r.id);
  const [hot] = await db.query<{ id: string; plate: string; n: number }>(
    `SELECT c.id, c.vehicle_registration AS plate, x.n
       FROM claims c
       JOIN LATERAL (SELECT count(*)::int AS n FROM claims o WHERE o.vehicle_registration = c.vehicle_registration) x ON true
      WHERE c.company_id = $1
      ORDER BY x.n DESC, c.id LIMIT 1`,
    [company.id],
  );
  if (!hot || random.length === 0) throw new Error('the company has no claims');
  const crowded = random[0]!;
  crowdedPlate = (await db.query<{ plate: string }>('SELECT vehicle_registration AS plate FROM claims WHERE id = $1', [crowded]))[0]!.plate;
  await db.query(
    `INSERT INTO claims (id, company_id, client_id, claim_date, claim_type, amount, currency, is_at_fault, vehicle_registration, source, status)
     WITH persons AS (SELECT id, row_number() OVER () AS n FROM (SELECT id FROM clients ORDER BY random() LIMIT $2) x),
          cos AS (SELECT array_agg(id) AS ids FROM companies)
     SELECT gen_random_uuid(), cos.ids[1 + p.n % cardinality(cos.ids)], p.id, current_date - (p.n % 900)::int, 'accident', 100, 'EUR',
            false, $1, 'api', 'filed'
       FROM persons p CROSS JOIN cos`,
    [crowdedPlate, hotClaims],
  );
  await db.query('ANALYZE claims');
  console.log(
    `company ${company.name}: ${random.length} random claims; hot claim ${hot.id} (plate ${hot.plate}, ${hot.n} claims); crowded claim ${crowded} (plate ${crowdedPlate}, ${hotClaims} claims added)`,
  );

  const mine = startServer(process.cwd());
  const baseline = baselineDir ? startServer(baselineDir) : undefined;
  await ready(mine);
  if (baseline) await ready(baseline);
  const pick = () => random[Math.floor(Math.random() * random.length)]!;
  const results: Record<string, Result> = {};
  results['incident random'] = await arm(mine.base, () => `/api/v1/claims/${pick()}/incident`);
  results['incident hot'] = await arm(mine.base, () => `/api/v1/claims/${hot.id}/incident`);
  results['incident crowded'] = await arm(mine.base, () => `/api/v1/claims/${crowded}/incident`);
  results['network random'] = await arm(mine.base, () => `/api/v1/claims/${pick()}/network`);
  results['network hot'] = await arm(mine.base, () => `/api/v1/claims/${hot.id}/network`);
  results['network crowded'] = await arm(mine.base, () => `/api/v1/claims/${crowded}/network`);
  if (baseline) {
    for (const round of [1, 2]) {
      results[`matches baseline ${round}`] = await arm(baseline.base, () => `/api/v1/claims/${pick()}/matches`);
      results[`matches this ${round}`] = await arm(mine.base, () => `/api/v1/claims/${pick()}/matches`);
    }
  }
  console.log(`\narm                     req/s   p50 ms   p99 ms   errors  non-2xx   (${connections} connections, ${seconds} s each)`);
  for (const [name, r] of Object.entries(results)) {
    console.log(
      `${name.padEnd(22)}${String(r.rps).padStart(7)}${String(r.p50).padStart(9)}${String(r.p99).padStart(9)}${String(r.errors).padStart(9)}${String(r.non2xx).padStart(9)}`,
    );
  }
  console.log(JSON.stringify({ kind: 'incident-network-bench', at: new Date().toISOString(), loadavg: os.loadavg(), results }));

  // The matches statement alone, this checkout's and the baseline's, on the same claims in turn,
  // one at a time (less noise than the HTTP arms on a shared machine): per-call times.
  if (baselineDir) {
    const { createRegistryRepository: baselineRepository } = (await import(`${baselineDir}/src/db/registry-repository.ts`)) as {
      createRegistryRepository: typeof createRegistryRepository;
    };
    const statements = { baseline: baselineRepository(db), this: createRegistryRepository(db) };
    const times: Record<keyof typeof statements, number[]> = { baseline: [], this: [] };
    for (let round = 0; round < 3; round++) {
      for (const id of random.slice(0, 500)) {
        const order: (keyof typeof statements)[] = round % 2 ? ['this', 'baseline'] : ['baseline', 'this'];
        for (const name of order) {
          const t0 = performance.now();
          await statements[name].matches(id, company.id, from, 'UTC');
          times[name].push(performance.now() - t0);
        }
      }
    }
    const q = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(p * xs.length) - 1)]!;
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    console.log('\nmatches statement alone, 1,500 calls each, one at a time, in turn:');
    for (const name of ['baseline', 'this'] as const) {
      const xs = times[name];
      console.log(
        `  ${name.padEnd(9)} mean ${(sum(xs) / xs.length).toFixed(3)} ms  p50 ${q(xs, 0.5).toFixed(3)}  p99 ${q(xs, 0.99).toFixed(3)}`,
      );
    }
    console.log(`  this / baseline (mean): ${(sum(times.this) / sum(times.baseline)).toFixed(3)}`);
  }

  // The plans, as the repository sends the statements (a custom plan with these parameters).
  let label = '';
  const explaining: Db = {
    ...db,
    async query<T>(text: string, params: readonly unknown[] = []) {
      const plan = await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${text}`, params);
      console.log(`\n===== ${label} =====\n${plan.map((r) => r['QUERY PLAN']).join('\n')}`);
      return [] as T[];
    },
  };
  const repo = createRegistryRepository(explaining);
  for (const [name, id] of [
    ['a random claim', random[1]!],
    ['the crowded claim', crowded],
  ] as const) {
    label = `incident, ${name}`;
    await repo.incident(id, company.id, from);
    label = `network, ${name}`;
    await repo.network(id, company.id, from, MAX_NETWORK_EDGES);
    label = `matches (with duplicate_claim and network), ${name}`;
    await repo.matches(id, company.id, from, 'UTC').catch(() => undefined);
  }
} finally {
  for (const s of servers) s.kill('SIGTERM');
  await sleep(500);
  if (crowdedPlate) {
    await db.query(
      `DELETE FROM alerts WHERE matched_claim_id IN (SELECT id FROM claims WHERE vehicle_registration = $1 AND source = 'api' AND created_at >= $2::timestamptz)`,
      [crowdedPlate, started],
    );
    await db.query(`DELETE FROM claims WHERE vehicle_registration = $1 AND source = 'api' AND created_at >= $2::timestamptz`, [
      crowdedPlate,
      started,
    ]);
  }
  await db.query('DELETE FROM lookups WHERE company_id = $1 AND created_at >= $2::timestamptz', [company.id, started]);
  await deleteBenchToken(db, token.id);
  await releaseRetention();
  await db.query('VACUUM ANALYZE claims');
  await db.close();
}
