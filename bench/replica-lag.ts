/**
 * What a search finds right after a submission when searches read a streaming replica.
 *
 *   scripts/start-replica.sh      # prints the replica's URL
 *   BENCH_SEARCH_DATABASE_URL=postgres://postgres@127.0.0.1:5433/test npm run bench:replica-lag
 *
 * Starts the API in this process on 127.0.0.1 (DATABASE_URL = BENCH_DATABASE_URL, default
 * postgres://postgres@127.0.0.1:5432/test; SEARCH_DATABASE_URL = BENCH_SEARCH_DATABASE_URL), in a
 * throw-away schema, with two companies. Then, BENCH_PAIRS times (200), over HTTP: one company
 * submits a claim on a new plate and, as soon as the 201 arrives, the other searches that plate.
 * It counts the searches that missed the claim and, for each miss, how long after the 201 the
 * claim was on the replica (polled there directly, in a tight loop, after the search). The pairs run one at a time,
 * then BENCH_CONCURRENCY (8) at a time. The primary's pg_stat_replication replay_lag is sampled
 * after each pair. The schema is dropped at the end.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';

import pino from 'pino';
import postgres from 'postgres';

import { buildApp } from '../src/app';
import { loadConfig } from '../src/config';
import { openDeps } from '../src/startup';
import { claimBody } from '../test/harness';

const primaryUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const replicaUrl = process.env.BENCH_SEARCH_DATABASE_URL;
const PAIRS = Number(process.env.BENCH_PAIRS ?? 200);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
if (!replicaUrl) {
  console.error('BENCH_SEARCH_DATABASE_URL is not set (scripts/start-replica.sh prints a replica URL)');
  process.exit(2);
}

const schema = `bench_lag_${randomBytes(4).toString('hex')}`;
const admin = postgres(primaryUrl, { max: 1, onnotice: () => {} });
const replica = postgres(replicaUrl, { max: CONCURRENCY, onnotice: () => {} });
await admin.unsafe(`CREATE SCHEMA ${schema}`);

const config = loadConfig({
  DATABASE_URL: primaryUrl,
  SEARCH_DATABASE_URL: replicaUrl,
  DOCUMENT_HASH_KEY: 'bench-document-hash-key-0123456789abcdef',
  SESSION_SECRET: 'bench-session-secret-0123456789abcdef0123',
  LOG_LEVEL: 'silent',
  ALERTS_ENABLED: 'true',
  DB_SEARCH_PATH: schema,
});
const logger = pino({ level: 'silent' });
const deps = await openDeps(config, { logger });
const app = await buildApp(deps, { logger });
await app.listen({ host: '127.0.0.1', port: 0 });
const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/api/v1`;

const tokenOf = async (name: string) => {
  const company = await deps.companies.createCompany(`${name} ${randomBytes(3).toString('hex')}`);
  return (await deps.tokens.create(company.id, 'bench')).token;
};
const owner = await tokenOf('Owner');
const searcher = await tokenOf('Searcher');

const post = async (token: string, path: string, body: unknown) => {
  const res = await fetch(base + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as { data: { id: string }[] & { id: string } };
};

type Pair = { missed: boolean; searchMs: number; visibleAfterMs: number | null; replayLagMs: number | null };

async function pair(): Promise<Pair> {
  const plate = `LAG${randomBytes(4).toString('hex').toUpperCase()}`;
  const claim = (await post(owner, '/claims', claimBody({ vehicle_registration: plate }))).data;
  const answered = performance.now();
  const found = (await post(searcher, '/claims/search-by-plate', { vehicle_registration: plate })).data;
  const searchMs = performance.now() - answered;
  const missed = !found.some((c) => c.id === claim.id);
  // A miss: how long after the 201 the replica had the claim (polled there, in a tight loop).
  let visibleAfterMs: number | null = null;
  while (missed) {
    const rows = await replica.unsafe(`SELECT 1 FROM ${schema}.claims WHERE id = $1`, [claim.id]).catch(() => []);
    visibleAfterMs = performance.now() - answered;
    if (rows.length === 1) break;
  }
  const [lag] = await admin.unsafe<{ ms: number | null }[]>(
    `SELECT (extract(epoch FROM max(replay_lag)) * 1000)::float8 AS ms FROM pg_stat_replication`,
  );
  return { missed, searchMs, visibleAfterMs, replayLagMs: lag?.ms ?? null };
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};

async function run(label: string, concurrency: number) {
  const pairs: Pair[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < PAIRS) pairs.push(await pair());
    }),
  );
  const missed = pairs.filter((p) => p.missed).length;
  const search = pairs.map((p) => p.searchMs);
  const visible = pairs.flatMap((p) => (p.visibleAfterMs === null ? [] : [p.visibleAfterMs]));
  const lags = pairs.flatMap((p) => (p.replayLagMs === null ? [] : [p.replayLagMs]));
  const f = (n: number) => n.toFixed(1);
  const spread = (xs: number[]) => (xs.length ? `p50 ${f(pct(xs, 50))}, p95 ${f(pct(xs, 95))}, max ${f(Math.max(...xs))} ms` : 'none');
  console.log(`${label}: ${pairs.length} pairs`);
  console.log(`  search answered after the 201: ${spread(search)}`);
  console.log(`  search missed the just-submitted claim: ${missed} (${f((100 * missed) / pairs.length)}%)`);
  console.log(`  missed claims on the replica after the 201: ${spread(visible)}`);
  console.log(`  pg_stat_replication replay_lag (${lags.length} samples): ${spread(lags)}`);
}

try {
  await run('one pair at a time', 1);
  await run(`${CONCURRENCY} pairs at a time`, CONCURRENCY);
} finally {
  await app.close();
  await deps.close();
  await replica.end();
  await admin.unsafe(`DROP SCHEMA ${schema} CASCADE`);
  await admin.end();
}
