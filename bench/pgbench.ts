/**
 * The database's own pace for the service's statements (issue 57): pgbench runs the statements the
 * repository sends, one request's worth per transaction, without the service and without group
 * commit, on a seeded database (the team bench's `perf_proj`: 1,000,000 claims, its seeded persons
 * `NID<n>`, plates `PL<n>`):
 *
 * - `search`: a plate search alone (ClaimRepository.searchByPlate), read-only;
 * - `search-logged`: the plate search and its look-up entry in one committed statement
 *   (searchByPlateLogged with one search): the limit for a search on record before it is answered;
 * - `submit`: a submission's document look-up (findDocuments), then its write with its match alerts
 *   (insertResolved with matchAlerts); 70% a seeded person, 30% a new one, as the team bench's load.
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/perf_proj npm run bench:pgbench
 *
 * The statements' text is taken from the repository itself (a Queryable that records what it is
 * sent), so the scripts follow the code; each parameter becomes an expression of pgbench's random
 * variables. BENCH_CASES (default all three), CONNS (32), SECS (15), BENCH_KEY (the team bench's
 * document key), BENCH_SCRIPTS (a folder to keep the scripts in). Prints tps and p99 per case.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import postgres from 'postgres';

import { createClaimRepository } from '../src/db/claim-repository';
import type { Queryable } from '../src/db/db';
import type { LookupEntry } from '../src/domain/registry/registry';

const SEARCH_YEARS = 3;
const FROM_DATE = `(current_date - interval '${SEARCH_YEARS} years')::date`;
const PLATE = `'PL' || lpad(:plate::text, 6, '0')`;
const literal = (expr: string) => `'{' || ${expr} || '}'`;

/** The statements the repository sends for each call, in order. */
async function recordStatements(): Promise<Record<'search' | 'searchLogged' | 'findDocuments' | 'insertAlerted', string>> {
  const sent: string[] = [];
  const recorder: Queryable = {
    async query<T>(text: string) {
      sent.push(text);
      return (text.includes('new_claims') ? [{ created_at: null, missing: 0 }] : []) as T[];
    },
    async exec() {},
  };
  const repo = createClaimRepository(recorder);
  const entry = {
    id: 'x',
    companyId: 'x',
    tokenId: null,
    userId: null,
    purpose: null,
    kind: 'plate_search',
    at: 0,
  } as unknown as LookupEntry;
  await repo.searchByPlate('X', '2000-01-01');
  await repo.searchByPlateLogged([{ plate: 'X', fromDate: '2000-01-01', entry }]);
  await repo.findDocuments([{ type: 'passport', hash: 'x' }]);
  const claim = {
    input: { claim_date: '2000-01-01', vehicle_registration: 'X' },
    id: 'x',
    clientId: 'x',
    companyId: 'x',
    source: 'api',
    importId: null,
  };
  await repo.insertResolved({ newClients: [], newDocuments: [] }, [claim as never], { fromDate: '2000-01-01', clients: {} });
  const [search, searchLogged, findDocuments, insertAlerted] = sent;
  return { search: search!, searchLogged: searchLogged!, findDocuments: findDocuments!, insertAlerted: insertAlerted! };
}

/**
 * The script's own variables, each read as text where it is not cast (a parameter of a prepared
 * statement needs a type). Only these names: the statements hold other colons (HH24:MI in formats).
 */
const VARIABLES = [
  'plate',
  'company',
  'token',
  'new_client',
  'newn',
  'dhash',
  'claim_id',
  'client_id',
  'age',
  'amount',
  'fault',
  'dtype',
  'pool',
  'r',
  'hkey',
];
const typed = (script: string) =>
  script
    .split('\n')
    .map((line) => (line.startsWith('\\') ? line : line.replace(new RegExp(`:(${VARIABLES.join('|')})\\b(?!::)`, 'g'), ':$1::text')))
    .join('\n');

/** `text` with each `$n` replaced by `(params[n - 1])`. */
function bind(text: string, params: string[]): string {
  // pgbench takes :MI and :SS of a time format for its variables: the same format, its colons quoted.
  return text.replace(/\$(\d+)/g, (_, n: string) => `(${params[Number(n) - 1]!})`).replaceAll('HH24:MI:SS', 'HH24":"MI":"SS');
}

export async function pgbenchScripts(): Promise<Record<string, string>> {
  const s = await recordStatements();
  const header = (what: string) => `-- ${what}\n-- Written by bench/pgbench.ts from the repository's statements (npm run bench:pgbench).\n`;
  const search = `${header('A plate search alone (ClaimRepository.searchByPlate).')}\\set plate random(1, 300000)
${bind(s.search, [PLATE, `${FROM_DATE}::text`]).trim()};
`;
  const searchLogged = `${header('A plate search and its look-up entry, one committed statement (ClaimRepository.searchByPlateLogged, one search).')}\\set plate random(1, 300000)
${bind(s.searchLogged, [
  `json_build_array(${PLATE})::text`,
  literal(FROM_DATE),
  literal('gen_random_uuid()'),
  literal(':company'),
  literal(':token'),
  `'{NULL}'`,
  `'[null]'`,
  literal('(extract(epoch FROM clock_timestamp()) * 1000)::bigint'),
]).trim()};
`;
  // The write: the client's arrays empty for a seeded person, one new person otherwise.
  const write = (newPerson: boolean) =>
    bind(s.insertAlerted, [
      newPerson ? literal(':new_client') : `'{}'`,
      newPerson ? `json_build_array('F' || :newn)::text` : `'[]'`,
      newPerson ? `json_build_array('L' || :newn)::text` : `'[]'`,
      newPerson ? literal(`(date '1940-01-01' + (:newn::bigint % 25000)::int)`) : `'{}'`,
      newPerson ? `'{passport}'` : `'{}'`,
      newPerson ? literal(':dhash') : `'{}'`,
      newPerson ? literal(':new_client') : `'{}'`,
      literal(':claim_id'),
      literal(':company'),
      literal(':client_id'),
      literal('(current_date - :age::int)'),
      `'{accident}'`,
      literal('(:amount::int / 100.0)'),
      `CASE WHEN :fault::int = 1 THEN '{t}' ELSE '{f}' END`,
      `json_build_array(${PLATE})::text`,
      `'{api}'`,
      `'{filed}'`,
      `'{NULL}'`,
      `${FROM_DATE}::text`,
      `json_build_object(:claim_id, json_build_object('id', :client_id, 'first_name', 'F', 'last_name', 'L', 'date_of_birth', '1980-01-01', 'id_documents', json_build_array(json_build_object('type', :dtype))))::text`,
    ]).trim();
  const submit = `${header("A submission: its document look-up, then its write with its match alerts (findDocuments, insertResolved), one request's worth.")}\\set r random(1, 100)
\\set pool random(1, 200000)
\\set newn random(1, 999999999999)
\\set plate random(1, 300000)
\\set age random(0, 1000)
\\set amount random(0, 2000000)
\\set fault random(0, 1)
-- The document as the service hashes it (seeded persons are NID<n>), and the ids the service makes.
SELECT CASE WHEN :r::int <= 70 THEN 'national_id' ELSE 'passport' END AS dtype,
       encode(hmac(CASE WHEN :r::int <= 70 THEN 'NID' || lpad(:pool::text, 9, '0') ELSE 'X' || :newn END, :hkey, 'sha256'), 'hex') AS dhash,
       gen_random_uuid() AS claim_id, gen_random_uuid() AS new_client \\gset
SELECT count(*) = 0 AS new_person, coalesce(min(f.client_id::text), :new_client) AS client_id FROM (
${bind(s.findDocuments, [literal(':dtype'), literal(':dhash')]).trim()}
) f \\gset
\\if :new_person
${write(true)};
\\else
${write(false)};
\\endif
`;
  return { 'search.sql': typed(search), 'search-logged.sql': typed(searchLogged), 'submit.sql': typed(submit) };
}

async function main() {
  const url = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/perf_proj';
  const conns = Number(process.env.CONNS ?? 32);
  const secs = Number(process.env.SECS ?? 15);
  const key = process.env.BENCH_KEY ?? 'perf-bench-document-hash-key-not-a-secret-0123456789';
  const cases = (process.env.BENCH_CASES ?? 'search search-logged submit').split(/\s+/).filter(Boolean);
  const dir = process.env.BENCH_SCRIPTS ?? fs.mkdtempSync(path.join(os.tmpdir(), 'claims-pgbench-'));
  fs.mkdirSync(dir, { recursive: true });
  const scripts = await pgbenchScripts();
  for (const [name, text] of Object.entries(scripts)) fs.writeFileSync(path.join(dir, name), text);

  const sql = postgres(url, { max: 1, onnotice: () => {} });
  // pgcrypto's hmac for the seeded documents' hashes: where it is, or in a schema of the bench's
  // own, dropped at the end; pgbench's sessions find it on their search_path.
  const [had] = await sql<
    { schema: string }[]
  >`SELECT extnamespace::regnamespace::text AS schema FROM pg_extension WHERE extname = 'pgcrypto'`;
  if (!had) {
    await sql`CREATE SCHEMA bench_pgbench`;
    await sql`CREATE EXTENSION pgcrypto SCHEMA bench_pgbench`;
  }
  const searchPath = `-c search_path=public,${had?.schema ?? 'bench_pgbench'}`;
  const [token] = await sql<{ company_id: string; id: string }[]>`SELECT company_id, id FROM api_tokens ORDER BY created_at LIMIT 1`;
  if (!token) throw new Error('no API token in the database: seed it first (the team bench setup.sh)');
  try {
    console.log('case           |     tps |  p50 ms |  p99 ms');
    for (const name of cases) {
      const logs = fs.mkdtempSync(path.join(os.tmpdir(), 'claims-pgbench-log-'));
      const out = execFileSync(
        'pgbench',
        [
          '-n',
          '-M',
          'prepared',
          '-c',
          String(conns),
          '-j',
          '2',
          '-T',
          String(secs),
          '-l',
          `--log-prefix=${path.join(logs, 'tx')}`,
          '-D',
          `company=${token.company_id}`,
          '-D',
          `token=${token.id}`,
          '-D',
          `hkey=${key}`,
          '-f',
          path.join(dir, `${name}.sql`),
          url,
        ],
        { encoding: 'utf8', env: { ...process.env, PGOPTIONS: searchPath } },
      );
      const tps = Number(/tps = ([\d.]+)/.exec(out)?.[1]);
      const latencies = fs
        .readdirSync(logs)
        .flatMap((f) => fs.readFileSync(path.join(logs, f), 'utf8').split('\n').filter(Boolean))
        .map((line) => Number(line.split(' ')[2]) / 1000)
        .sort((a, b) => a - b);
      fs.rmSync(logs, { recursive: true, force: true });
      const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))] ?? NaN;
      console.log(
        `${name.padEnd(14)} | ${tps.toFixed(0).padStart(7)} | ${at(0.5).toFixed(2).padStart(7)} | ${at(0.99).toFixed(2).padStart(7)}`,
      );
    }
  } finally {
    if (!had) await sql`DROP SCHEMA bench_pgbench CASCADE`;
    await sql.end();
  }
  if (!process.env.BENCH_SCRIPTS) fs.rmSync(dir, { recursive: true, force: true });
}

if (process.argv[1]?.endsWith('pgbench.ts')) await main();
