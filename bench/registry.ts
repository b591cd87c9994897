/**
 * Registry reads under load, in one run: the plate search, the matches of a claim and the search
 * by person, one after the other against the same server and database, with p99 ratios to the
 * plate search (the look-up log is written by each of them).
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/<seeded db> BENCH_DOCUMENT_HASH_KEY=<its key> \
 *   BENCH_TOKEN=<csk_… of a company with claims> npx tsx bench/registry.ts
 *
 * The database is one seeded with persons whose national_id is NID<n> (9 digits) and whose date of
 * birth is 1940-01-01 plus n × 7919 mod 25000 days (n = 1…BENCH_PERSONS), with plates listed in
 * BENCH_PLATES_FILE (one a line). Starts `src/main-api.ts` on 127.0.0.1, runs autocannon for a
 * bounded time (BENCH_SECONDS, default 10, after 2 s of warm-up) with BENCH_CONNECTIONS (default 32)
 * on each endpoint, prints one line per endpoint and stops the server. Writes look-ups into the
 * database it runs against.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

import autocannon from 'autocannon';

const dbUrl = process.env.BENCH_DATABASE_URL;
const key = process.env.BENCH_DOCUMENT_HASH_KEY;
const token = process.env.BENCH_TOKEN;
if (!dbUrl || !key || !token) {
  console.error('Set BENCH_DATABASE_URL, BENCH_DOCUMENT_HASH_KEY and BENCH_TOKEN (see the comment at the top of bench/registry.ts).');
  process.exit(2);
}
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const persons = Number(process.env.BENCH_PERSONS ?? 200_000);
const knownShare = Number(process.env.BENCH_KNOWN_SHARE ?? 0.7);
const plates = readFileSync(process.env.BENCH_PLATES_FILE ?? '/tmp/perf-out/plates.txt', 'utf8')
  .split('\n')
  .filter(Boolean);
const port = 3950 + Math.floor(Math.random() * 40);
const base = `http://127.0.0.1:${port}`;
const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json' };

const rnd = (n: number) => Math.floor(Math.random() * n);
const DAY = 86_400_000;
const seededDob = (n: number) => new Date(Date.UTC(1940, 0, 1) + ((n * 7919) % 25000) * DAY).toISOString().slice(0, 10);

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
const stop = () => server.kill('SIGTERM');
process.on('SIGINT', () => {
  stop();
  process.exit(130);
});

try {
  for (let i = 0; ; i++) {
    if (i > 120) throw new Error('the server did not start within 60 s');
    if (server.exitCode !== null) throw new Error('the server exited');
    try {
      if ((await fetch(`${base}/healthz`)).ok) break;
    } catch {
      /* not yet */
    }
    await sleep(500);
  }
  // Claim ids of the caller's company, for the matches: the first pages of its claims list.
  const claimIds: string[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 10; page++) {
    const res = await fetch(`${base}/api/v1/claims?limit=100${cursor ? `&cursor=${cursor}` : ''}`, { headers });
    const body = (await res.json()) as { data: { id: string }[]; meta: { next_cursor: string | null } };
    claimIds.push(...body.data.map((c) => c.id));
    cursor = body.meta.next_cursor;
    if (!cursor) break;
  }
  if (claimIds.length === 0) throw new Error("the token's company has no claims");

  const personBody = () => {
    if (Math.random() < knownShare) {
      const n = 1 + rnd(persons);
      return { date_of_birth: seededDob(n), id_documents: [{ type: 'national_id', number: `NID${String(n).padStart(9, '0')}` }] };
    }
    return { date_of_birth: '1980-01-01', id_documents: [{ type: 'national_id', number: `UNKNOWN${rnd(1e9)}` }] };
  };
  const arms: Record<string, () => autocannon.Request> = {
    plate_search: () => ({
      method: 'POST',
      path: '/api/v1/claims/search-by-plate',
      body: JSON.stringify({ vehicle_registration: plates[rnd(plates.length)] }),
    }),
    matches: () => ({ method: 'GET', path: `/api/v1/claims/${claimIds[rnd(claimIds.length)]}/matches` }),
    person_search: () => ({ method: 'POST', path: '/api/v1/claims/search-by-person', body: JSON.stringify(personBody()) }),
  };
  const results: Record<string, { rps: number; p50: number; p99: number; errors: number; non2xx: number }> = {};
  for (const [name, request] of Object.entries(arms)) {
    const run = (duration: number) =>
      autocannon({
        url: base,
        connections,
        duration,
        headers,
        requests: [{ setupRequest: (r: autocannon.Request) => ({ ...r, ...request() }) }],
      });
    await run(2);
    const r = await run(seconds);
    results[name] = { rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, errors: r.errors, non2xx: r.non2xx };
  }
  const plateP99 = results.plate_search!.p99;
  console.log(`endpoint       req/s   p50 ms   p99 ms   p99/plate   errors  non-2xx   (${connections} connections, ${seconds} s)`);
  for (const [name, r] of Object.entries(results)) {
    console.log(
      `${name.padEnd(14)}${String(r.rps).padStart(6)}${String(r.p50).padStart(9)}${String(r.p99).padStart(9)}${(r.p99 / plateP99).toFixed(2).padStart(12)}${String(r.errors).padStart(9)}${String(r.non2xx).padStart(9)}`,
    );
  }
  console.log(JSON.stringify({ kind: 'registry-bench', at: new Date().toISOString(), connections, seconds, results }));
} finally {
  stop();
}
