/**
 * GET /api/v1/alerts and GET /api/v1/quality on a large registry, through HTTP, against the goal
 * of issue 25 (under 50 ms each), then the plan of each of their statements.
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/<seeded db> BENCH_DOCUMENT_HASH_KEY=<its key> npm run bench:alerts-quality
 *
 * On a seeded database (1,000,000 claims of 20 companies for the figures in docs/registry-alerts.md):
 *
 * 1. gives one company (BENCH_COMPANY, by name; default the company with the most claims)
 *    BENCH_ALERTS alerts (default 50,000) with one set-based INSERT: pairs of one of its claims and
 *    another company's claim with the same plate or person, both in the search window (as the
 *    service's match statement finds them), received over the last 365 days, one in 20 a
 *    status_changed alert. Only the alerts table is written (not their look-up entries: neither
 *    endpoint reads them). Then ANALYZE alerts, as autovacuum would;
 * 2. starts the service (`src/main-api.ts`, pool 10) on 127.0.0.1 with a throw-away token of that
 *    company, and times sequentially (BENCH_WARMUP requests, default 20, then BENCH_REQUESTS,
 *    default 200, at most BENCH_SECONDS, default 30, per endpoint): the first page of alerts, the
 *    second page (cursor), a page 10,000 alerts deep (cursor), the alerts of the company's claim
 *    with the most alerts (?claim_id=), and the quality report for 90 and 365 days; p50/p95/p99;
 * 3. prints EXPLAIN (ANALYZE, BUFFERS) of each statement exactly as the repositories send it,
 *    with its parameters (a custom plan), and again as a prepared statement's generic plan, which
 *    PostgreSQL switches to after five runs of the same statement on a connection (the service
 *    prepares every statement);
 * 4. deletes the alerts and the token it made (the database is as it found it; the daily
 *    retention run's time is put back too) and runs VACUUM ANALYZE on alerts.
 *
 * Runs one request at a time (no load on the machine beyond one client and one server); the
 * service's log goes to BENCH_OUT (default <tmp>/claims-bench-alerts).
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';

import type { ChildProcess } from 'node:child_process';

import { createAlertRepository } from '../src/db/alert-repository';
import { openDb, type Db } from '../src/db/db';
import { createQualityRepository } from '../src/db/quality-repository';
import { encodeCursor } from '../src/domain/paging';
import { minusYears, todayIn } from '../src/domain/dates';

import {
  benchCompany,
  createBenchToken,
  deleteBenchToken,
  freePort,
  holdRetention,
  interruptible,
  quantile,
  startNode,
  stopNode,
  waitReady,
} from './bench-process';

const url = process.env.BENCH_DATABASE_URL;
const key = process.env.BENCH_DOCUMENT_HASH_KEY;
if (!url || !key) {
  console.error('Set BENCH_DATABASE_URL and BENCH_DOCUMENT_HASH_KEY (see the comment at the top of bench/alerts-quality.ts).');
  process.exit(2);
}
const alertsWanted = Number(process.env.BENCH_ALERTS ?? 50_000);
const requests = Number(process.env.BENCH_REQUESTS ?? 200);
const warmup = Number(process.env.BENCH_WARMUP ?? 20);
const maxSeconds = Number(process.env.BENCH_SECONDS ?? 30);
const outDir = path.resolve(process.env.BENCH_OUT ?? path.join(os.tmpdir(), 'claims-bench-alerts'));
const GOAL_MS = 50;
const DEEP = 10_000;
const signal = interruptible();

/**
 * The alerts of one company, set-based: pairs (its claim, another company's claim) sharing the
 * plate or the client, both dated in the search window, in a fixed pseudo-random order ($3 of
 * them), received evenly over the last 365 days; every 20th a status change of the other claim.
 */
const MAKE_ALERTS = `
  WITH own AS MATERIALIZED (
    SELECT id, vehicle_registration, client_id FROM claims WHERE company_id = $1 AND claim_date >= $2::date
  ), pairs AS (
    SELECT o.id AS claim_id, m.id AS matched_id
      FROM own o JOIN claims m ON m.vehicle_registration = o.vehicle_registration AND m.claim_date >= $2::date AND m.company_id <> $1
    UNION
    SELECT o.id, m.id
      FROM own o JOIN claims m ON m.client_id = o.client_id AND m.claim_date >= $2::date AND m.company_id <> $1
  ), picked AS (
    SELECT claim_id, matched_id, row_number() OVER (ORDER BY md5(claim_id::text || matched_id::text)) AS n
      FROM pairs
     ORDER BY md5(claim_id::text || matched_id::text)
     LIMIT $3
  )
  INSERT INTO alerts (company_id, kind, claim_id, matched_claim_id, on_plate, on_client, from_status, to_status, created_at)
  SELECT $1, s.kind, CASE WHEN s.kind = 'match' THEN p.claim_id END, p.matched_id,
         s.kind = 'match' AND o.vehicle_registration = m.vehicle_registration, s.kind = 'match' AND o.client_id = m.client_id,
         CASE WHEN s.kind = 'status_changed' THEN 'filed' END, CASE WHEN s.kind = 'status_changed' THEN m.status END,
         now() - (p.n::float8 / $3) * interval '365 days'
    FROM picked p
    JOIN claims o ON o.id = p.claim_id
    JOIN claims m ON m.id = p.matched_id
    CROSS JOIN LATERAL (SELECT CASE WHEN p.n % 20 = 0 AND m.status <> 'filed' THEN 'status_changed' ELSE 'match' END AS kind) s
  ON CONFLICT DO NOTHING
  RETURNING id`;

type Timing = { label: string; n: number; p50: number; p95: number; p99: number; max: number; bad: number };

/** `requests` sequential GETs of `target` after `warmup` ones, at most maxSeconds; ms figures. */
async function time(label: string, base: string, target: string, headers: Record<string, string>): Promise<Timing> {
  const once = async () => {
    const t0 = performance.now();
    const res = await fetch(base + target, { headers });
    await res.arrayBuffer();
    return { ms: performance.now() - t0, ok: res.status === 200 };
  };
  for (let i = 0; i < warmup; i++) await once();
  const samples: number[] = [];
  let bad = 0;
  const until = performance.now() + maxSeconds * 1000;
  for (let i = 0; i < requests && performance.now() < until; i++) {
    signal.throwIfAborted();
    const r = await once();
    samples.push(r.ms);
    if (!r.ok) bad++;
  }
  samples.sort((a, b) => a - b);
  return {
    label,
    n: samples.length,
    p50: quantile(samples, 0.5),
    p95: quantile(samples, 0.95),
    p99: quantile(samples, 0.99),
    max: samples.at(-1)!,
    bad,
  };
}

/** A parameter written into SQL text (for EXECUTE of a prepared statement): NULL, a number, or a quoted string. */
function literal(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (typeof v === 'number') return String(v);
  if (typeof v !== 'string') throw new Error(`no literal for a ${typeof v} parameter`);
  return `'${v.replaceAll("'", "''")}'`;
}

/**
 * A Db that prints the plans of the statements sent to it instead of returning their rows (the
 * repositories then see no rows): with their parameters (custom plan), and as PREPARE + EXECUTE
 * under plan_cache_mode = force_generic_plan (the generic plan a prepared statement ends up with).
 */
function explaining(db: Db, label: () => string): Db {
  return {
    ...db,
    async query<T>(text: string, params: readonly unknown[] = []) {
      const show = (kind: string, rows: { 'QUERY PLAN': string }[]) =>
        console.log(`\n===== ${label()}: ${kind} =====\n${rows.map((r) => r['QUERY PLAN']).join('\n')}`);
      show('custom plan (parameters known)', await db.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${text}`, params));
      await db.exec(`SET plan_cache_mode = force_generic_plan; PREPARE bench_explain AS ${text}`);
      try {
        show(
          'generic plan (what a prepared statement runs from its 6th run on if PostgreSQL finds it no dearer than the custom plans)',
          await db.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE bench_explain(${params.map(literal).join(', ')})`),
        );
      } finally {
        await db.exec('DEALLOCATE bench_explain; RESET plan_cache_mode');
      }
      return [] as T[];
    },
  };
}

// One connection: PREPARE, SET and EXECUTE of the plans must meet on the same session.
const db = await openDb({ kind: 'postgres', url, poolSize: 1 });
let alertIds: string[] = [];
let tokenId: string | undefined;
let restoreRetention: (() => Promise<void>) | undefined;
let server: ChildProcess | undefined;
try {
  const company = await benchCompany(db, process.env.BENCH_COMPANY);
  const from = minusYears(todayIn('UTC'), 3);
  const claims = (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM claims'))[0]!.n;
  console.log(`database: ${claims.toLocaleString('en')} claims; company "${company.name}"`);

  let t0 = performance.now();
  alertIds = (await db.query<{ id: string }>(MAKE_ALERTS, [company.id, from, alertsWanted])).map((r) => r.id);
  await db.exec('ANALYZE alerts');
  const total = (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM alerts WHERE company_id = $1', [company.id]))[0]!.n;
  console.log(
    `made ${alertIds.length.toLocaleString('en')} alerts set-based in ${((performance.now() - t0) / 1000).toFixed(1)} s; the company has ${total.toLocaleString('en')}`,
  );

  const token = await createBenchToken(db, company.id, `alerts bench ${randomBytes(3).toString('hex')}`);
  tokenId = token.id;
  restoreRetention = await holdRetention(db);
  const port = freePort();
  const base = `http://127.0.0.1:${port}`;
  server = startNode(
    'service',
    ['--import', 'tsx', 'src/main-api.ts'],
    {
      DATABASE_URL: url,
      DOCUMENT_HASH_KEY: key,
      SESSION_SECRET: randomBytes(32).toString('base64url'),
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      DB_POOL_SIZE: '10',
      DATA_DIR: path.join(outDir, 'data'),
    },
    outDir,
  );
  await waitReady(server, `${base}/readyz`, 'service', outDir);

  const headers = { authorization: `Bearer ${token.token}`, accept: 'application/json' };
  const first = (await (await fetch(`${base}/api/v1/alerts`, { headers })).json()) as {
    data: unknown[];
    meta: { next_cursor: string | null };
  };
  if (first.data.length === 0 || !first.meta.next_cursor) throw new Error('the company has fewer than two pages of alerts');
  // Cursor positions deep in the list: 10,000 alerts in, and the last page.
  const position = async (offset: number) =>
    (
      await db.query<{ ts: string; id: string }>(
        `SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS ts, id FROM alerts WHERE company_id = $1
          ORDER BY created_at DESC, id DESC OFFSET $2 LIMIT 1`,
        [company.id, Math.max(0, offset)],
      )
    )[0];
  const deep = [
    { label: `${DEEP.toLocaleString('en')} deep`, at: await position(DEEP - 1) },
    { label: `last page, ${(total - 26).toLocaleString('en')} deep`, at: await position(total - 26) },
  ].filter((d): d is { label: string; at: { ts: string; id: string } } => d.at !== undefined);
  const [busiest] = await db.query<{ claim_id: string; n: number }>(
    `SELECT claim_id, count(*)::int AS n FROM alerts WHERE company_id = $1 AND claim_id IS NOT NULL GROUP BY claim_id ORDER BY n DESC LIMIT 1`,
    [company.id],
  );
  const targets: [string, string][] = [
    ['alerts, first page', '/api/v1/alerts'],
    ['alerts, second page (cursor)', `/api/v1/alerts?cursor=${first.meta.next_cursor}`],
    ...deep.map((d): [string, string] => [`alerts, ${d.label} (cursor)`, `/api/v1/alerts?cursor=${encodeCursor(d.at)}`]),
    ...(busiest ? [[`alerts ?claim_id= (${busiest.n} alerts)`, `/api/v1/alerts?claim_id=${busiest.claim_id}`] as [string, string]] : []),
    ['quality (90 days)', '/api/v1/quality'],
    ['quality (365 days)', '/api/v1/quality?days=365'],
  ];
  const results: Timing[] = [];
  t0 = performance.now();
  for (const [label, target] of targets) results.push(await time(label, base, target, headers));
  console.log(
    `\nsequential requests, ${warmup} warm-up then up to ${requests} each (${((performance.now() - t0) / 1000).toFixed(0)} s); goal: under ${GOAL_MS} ms\n`,
  );
  console.log(`${'endpoint'.padEnd(40)}     n   p50 ms   p95 ms   p99 ms   max ms  non-200  goal`);
  for (const r of results) {
    console.log(
      `${r.label.padEnd(40)}${String(r.n).padStart(6)}${[r.p50, r.p95, r.p99, r.max].map((v) => v.toFixed(1).padStart(9)).join('')}${String(r.bad).padStart(9)}  ${r.p99 < GOAL_MS ? 'met (p99)' : r.p50 < GOAL_MS ? 'p50 only' : 'MISSED'}`,
    );
  }
  console.log(
    JSON.stringify({ kind: 'alerts-quality-bench', at: new Date().toISOString(), claims, alerts: total, loadavg: os.loadavg(), results }),
  );

  // ---- the plans, through the repositories' own statements ------------------------------------------
  let label = '';
  const shim = explaining(db, () => label);
  const alertRepo = createAlertRepository(shim);
  const qualityRepo = createQualityRepository(shim);
  label = 'alerts, first page';
  await alertRepo.list(company.id, { claimId: undefined, after: undefined, limit: 26 });
  for (const d of deep) {
    label = `alerts, ${d.label} (cursor)`;
    await alertRepo.list(company.id, { claimId: undefined, after: d.at, limit: 26 });
  }
  if (busiest) {
    label = 'alerts of one claim (?claim_id=)';
    await alertRepo.list(company.id, { claimId: busiest.claim_id, after: undefined, limit: 26 });
  }
  label = 'alerts of the last 7 days (the dashboard navigation count)';
  // The shim returns no rows, which this method does not expect: only the plan matters here.
  await alertRepo.countSince(company.id, new Date(Date.now() - 7 * 86_400_000).toISOString()).catch(() => undefined);
  for (const days of [90, 365]) {
    label = `quality (${days} days)`;
    await qualityRepo.counts(company.id, days, 'UTC');
  }
} finally {
  await stopNode(server);
  if (alertIds.length > 0) {
    for (let i = 0; i < alertIds.length; i += 10_000) {
      await db.query('DELETE FROM alerts WHERE id = ANY ($1::uuid[])', [alertIds.slice(i, i + 10_000)]);
    }
    await db.exec('VACUUM ANALYZE alerts');
    console.log(`\ncleaned up: ${alertIds.length.toLocaleString('en')} alerts deleted`);
  }
  if (tokenId) await deleteBenchToken(db, tokenId);
  await restoreRetention?.();
  await db.close();
}
