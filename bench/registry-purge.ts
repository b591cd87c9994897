/**
 * Does the retention purge hold up submissions? Adds BENCH_EXPIRED (default 100,000) claims dated
 * 7 years ago (source 'api', 1 in 10 for a new person who then has no other claim), starts the API,
 * submits claims continuously (BENCH_PROBE_CONCURRENCY, default 4, in a loop) for 3 s, then while
 * the purge runs batch after batch, then 2 s more; prints each batch's duration and the submission
 * latencies before and during the purge.
 *
 *   BENCH_DATABASE_URL=postgres://…/<db> BENCH_DOCUMENT_HASH_KEY=<its key> BENCH_TOKEN=<csk_…> npx tsx bench/registry-purge.ts
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';

import { openDb } from '../src/db/db';
import { createRegistryRepository } from '../src/db/registry-repository';
import { minusYears, todayIn } from '../src/domain/dates';
import { MAX_PURGE_BATCH } from '../src/domain/registry/registry-service';

const dbUrl = process.env.BENCH_DATABASE_URL;
const key = process.env.BENCH_DOCUMENT_HASH_KEY;
const token = process.env.BENCH_TOKEN;
if (!dbUrl || !key || !token) {
  console.error('Set BENCH_DATABASE_URL, BENCH_DOCUMENT_HASH_KEY and BENCH_TOKEN.');
  process.exit(2);
}
const expired = Number(process.env.BENCH_EXPIRED ?? 100_000);
const concurrency = Number(process.env.BENCH_PROBE_CONCURRENCY ?? 4);
const port = 3990 + Math.floor(Math.random() * 9);
const base = `http://127.0.0.1:${port}`;

const db = await openDb({ kind: 'postgres', url: dbUrl, poolSize: 2 });
const today = todayIn('UTC');
const old = minusYears(today, 7);
console.log(`adding ${expired} claims dated ${old}…`);
await db.exec(`
  WITH src AS (
    SELECT c.company_id, c.client_id, c.vehicle_registration, row_number() OVER () AS n
      FROM claims c WHERE c.source = 'assisted' LIMIT ${expired}
  ), fresh AS (
    INSERT INTO clients (id, first_name, last_name, date_of_birth)
    SELECT md5('purge-bench-' || n || '${randomBytes(4).toString('hex')}')::uuid, 'Old', 'Person', date '1950-01-01'
      FROM src WHERE n % 10 = 0
    RETURNING id
  ), fresh_n AS (SELECT id, row_number() OVER () AS k FROM fresh)
  INSERT INTO claims (id, company_id, client_id, claim_date, vehicle_registration, source, status)
  SELECT gen_random_uuid(), s.company_id, coalesce(f.id, s.client_id), date '${old}', s.vehicle_registration, 'api', 'closed'
    FROM src s LEFT JOIN fresh_n f ON s.n % 10 = 0 AND f.k = s.n / 10;
  ANALYZE claims;`);

const server = spawn(process.execPath, ['--import', 'tsx', 'src/main-api.ts'], {
  env: {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DATABASE_URL: dbUrl,
    DOCUMENT_HASH_KEY: key,
    SESSION_SECRET: 'registry-bench-session-secret-0123456789abcdef',
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    DATA_DIR: '/tmp/registry-bench-data',
  },
  stdio: ['ignore', 'inherit', 'inherit'],
});
try {
  for (let i = 0; ; i++) {
    if (i > 120 || server.exitCode !== null) throw new Error('the server did not start');
    try {
      if ((await fetch(`${base}/healthz`)).ok) break;
    } catch {
      /* not yet */
    }
    await sleep(500);
  }
  const samples: { at: number; ms: number; phase: string }[] = [];
  let phase = 'before';
  let running = true;
  const submitOne = async () => {
    const body = {
      client: {
        first_name: 'Probe',
        last_name: 'Person',
        date_of_birth: '1980-05-05',
        id_documents: [{ type: 'passport', number: `PRB${randomBytes(6).toString('hex')}` }],
      },
      claim_date: today,
      vehicle_registration: `PRB${randomBytes(3).toString('hex')}`,
    };
    const t0 = performance.now();
    const res = await fetch(`${base}/api/v1/claims`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    await res.arrayBuffer();
    if (res.status !== 201) throw new Error(`submission answered ${res.status}`);
    samples.push({ at: performance.now(), ms: performance.now() - t0, phase });
  };
  const probes = Array.from({ length: concurrency }, async () => {
    while (running) await submitOne();
  });
  await sleep(3000);
  phase = 'purge';
  const repo = createRegistryRepository(db);
  const cutoff = minusYears(today, 6);
  const batches: { ms: number; claims: number; clients: number }[] = [];
  for (;;) {
    const t0 = performance.now();
    const r = await repo.purgeClaimsBatch(cutoff, MAX_PURGE_BATCH);
    batches.push({ ms: Math.round(performance.now() - t0), claims: r.claims, clients: r.clients });
    if (r.claims < MAX_PURGE_BATCH) break;
  }
  phase = 'after';
  await sleep(2000);
  running = false;
  await Promise.all(probes);

  const stats = (p: string) => {
    const xs = samples
      .filter((s) => s.phase === p)
      .map((s) => s.ms)
      .sort((a, b) => a - b);
    const q = (f: number) => Math.round(xs[Math.min(xs.length - 1, Math.floor(xs.length * f))] ?? 0);
    return { n: xs.length, p50: q(0.5), p99: q(0.99), max: Math.round(xs.at(-1) ?? 0) };
  };
  console.log('batches (ms, claims, clients):', batches.map((b) => `${b.ms}/${b.claims}/${b.clients}`).join('  '));
  const maxBatch = Math.max(...batches.map((b) => b.ms));
  console.log(
    `purged ${batches.reduce((s, b) => s + b.claims, 0)} claims, ${batches.reduce((s, b) => s + b.clients, 0)} clients in ${batches.length} batches; longest batch ${maxBatch} ms`,
  );
  for (const p of ['before', 'purge', 'after']) console.log(`submissions ${p.padEnd(7)}`, JSON.stringify(stats(p)));
  console.log(
    JSON.stringify({
      kind: 'registry-purge-bench',
      at: new Date().toISOString(),
      batches,
      maxBatch,
      before: stats('before'),
      purge: stats('purge'),
      after: stats('after'),
    }),
  );
} finally {
  server.kill('SIGTERM');
  await db.close();
}
