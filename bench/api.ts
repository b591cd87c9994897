/**
 * API benchmark on PostgreSQL: submit a claim and search by plate, against a real server process.
 *
 *   npm run bench:api            (BENCH_DATABASE_URL defaults to the local PostgreSQL, database "test")
 *
 * Creates a throw-away database, seeds it set-based (BENCH_SEED_CLAIMS claims, default 200,000, over
 * a quarter as many plates), starts `src/main-api.ts` on 127.0.0.1, runs autocannon for a bounded
 * time against each endpoint, prints the figures, and drops the database.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';

import autocannon from 'autocannon';
import postgres from 'postgres';

import { loadConfig } from '../src/config';
import { createDeps } from '../src/deps';

const baseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const seedClaims = Number(process.env.BENCH_SEED_CLAIMS ?? 200_000);
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 16);
const port = 3900 + Math.floor(Math.random() * 90);
const dbName = `claims_bench_${randomBytes(4).toString('hex')}`;
const key = randomBytes(32).toString('base64url');

const admin = postgres(baseUrl, { max: 1, onnotice: () => {} });
await admin.unsafe(`CREATE DATABASE ${dbName}`);
const url = baseUrl.replace(/\/[^/]*$/u, `/${dbName}`);
let server: ReturnType<typeof spawn> | undefined;
try {
  const deps = await createDeps(loadConfig({ DATABASE_URL: url, DOCUMENT_HASH_KEY: key, DB_POOL_SIZE: '2', LOG_LEVEL: 'silent' }));
  const company = await deps.companies.createCompany('Bench Insurance');
  const { token } = await deps.tokens.create(company.id, 'bench');
  const plates = Math.max(1, Math.floor(seedClaims / 4));
  console.log(`seeding ${seedClaims} claims over ${plates} plates…`);
  await deps.db.query(
    `WITH c AS (
       INSERT INTO clients (id, first_name, last_name, date_of_birth)
       SELECT gen_random_uuid(), 'Seed', 'Person ' || g, date '1970-01-01' + (g % 15000)
         FROM generate_series(1, $1::int / 2) g RETURNING id
     ), numbered AS (SELECT id, row_number() OVER () AS n FROM c)
     INSERT INTO claims (id, company_id, client_id, claim_date, claim_type, amount, vehicle_registration, source, status)
     SELECT gen_random_uuid(), $2, n.id, current_date - ((g * 7) % 1400), 'accident', 100, 'P' || (g % $3), 'api', 'filed'
       FROM generate_series(1, $1::int) g JOIN numbered n ON n.n = 1 + (g % ($1::int / 2))`,
    [seedClaims, company.id, plates],
  );
  await deps.db.query('ANALYZE');
  await deps.close();

  server = spawn('node_modules/.bin/tsx', ['src/main-api.ts'], {
    env: { ...process.env, DATABASE_URL: url, DOCUMENT_HASH_KEY: key, SESSION_SECRET: randomBytes(32).toString('base64url'), PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  let ready = false;
  for (let i = 0; i < 60 && !ready && server.exitCode === null; i++) {
    ready = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.ok).catch(() => false);
    if (!ready) await sleep(500);
  }
  if (!ready) throw new Error('the server did not become ready; see its output above');

  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json' };
  let n = 0;
  const run = (title: string, path: string, body: () => string) =>
    autocannon({
      url: `http://127.0.0.1:${port}${path}`,
      method: 'POST',
      headers,
      connections,
      duration: seconds,
      requests: [{ setupRequest: (req) => ({ ...req, body: body() }) }],
    }).then((r) => {
      const non2xx = r.non2xx + r.errors;
      console.log(
        `${title}: ${Math.round(r.requests.average)} req/s, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms, ${non2xx} errors/non-2xx of ${r.requests.total}`,
      );
    });

  // 30% of submissions are a person already on record, as in real traffic.
  await run('submit claim', '/api/v1/claims', () => {
    n++;
    const person = n % 10 < 3 ? n % 1000 : n + 1_000_000;
    return JSON.stringify({
      client: { first_name: 'Bench', last_name: `P${person}`, date_of_birth: '1980-01-01', id_documents: [{ type: 'passport', number: `LT-${person}` }] },
      claim_date: '2026-01-15',
      vehicle_registration: `B${n % 5000}`,
      amount: 100.5,
      claim_type: 'theft',
    });
  });
  await run('search by plate', '/api/v1/claims/search-by-plate', () => JSON.stringify({ vehicle_registration: `P${Math.floor(Math.random() * plates)}` }));
} finally {
  if (server?.pid && server.exitCode === null) {
    server.kill('SIGTERM');
    await new Promise((resolve) => server!.once('exit', resolve));
  }
  await admin.unsafe(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
}
