/**
 * How an import chunk's rows reach PostgreSQL: the project's way (one text parameter per column,
 * zipped back into rows by `ROWS FROM (unnest(…), json_array_elements_text(…))`, src/db/columns.ts)
 * against the driver's `COPY … FROM STDIN`, straight into the table or into a staging table and then
 * one `INSERT … SELECT`. Each way writes the same 90 chunks of 1,000 claim-shaped rows, a
 * transaction per chunk, into a temporary table with the claims' column types and no index (so
 * that the transport is all that differs), three rounds taking turns; it prints each way's time,
 * the time this process spent building what it sends, and the medians.
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres [BENCH_NODELAY=1] npm run bench:copy-transport
 *
 * It writes only to temporary tables of its own session.
 */
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { performance } from 'node:perf_hooks';

import postgres from 'postgres';

import { arrayLiteral, jsonArray } from '../src/db/columns';

const CHUNKS = Number(process.env.BENCH_CHUNKS ?? 90);
const ROWS = Number(process.env.BENCH_CHUNK_ROWS ?? 1000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

type Row = {
  id: string;
  companyId: string;
  clientId: string;
  claimDate: string;
  claimType: string;
  amount: string;
  atFault: string;
  plate: string;
  source: string;
  status: string;
  importId: string;
};

const COLUMNS = 'id, company_id, client_id, claim_date, claim_type, amount, is_at_fault, vehicle_registration, source, status, import_id';
const TABLE = `(id uuid, company_id uuid, client_id uuid, claim_date date, claim_type text, amount numeric(12,2),
                is_at_fault boolean, vehicle_registration text, source text, status text, import_id uuid)`;

const INSERT_PARAMS = `INSERT INTO t (${COLUMNS})
  SELECT * FROM ROWS FROM (unnest($1::text::uuid[]), unnest($2::text::uuid[]), unnest($3::text::uuid[]),
                           unnest($4::text::date[]), unnest($5::text::text[]), unnest($6::text::numeric[]),
                           unnest($7::text::boolean[]), json_array_elements_text($8::text::json),
                           unnest($9::text::text[]), unnest($10::text::text[]), unnest($11::text::uuid[]))`;

function chunkOf(companyId: string, importId: string): Row[] {
  return Array.from({ length: ROWS }, (_, i) => ({
    id: randomUUID(),
    companyId,
    clientId: randomUUID(),
    claimDate: `2025-0${1 + (i % 9)}-${String(1 + (i % 28)).padStart(2, '0')}`,
    claimType: ['collision', 'theft', 'glass'][i % 3]!,
    amount: `${(i * 37) % 50000}.${String(i % 100).padStart(2, '0')}`,
    atFault: i % 2 === 0 ? 'true' : 'false',
    plate: `AB${String(i).padStart(5, '0')}`,
    source: 'bulk_import',
    status: 'filed',
    importId,
  }));
}

const params = (rows: Row[]) => [
  arrayLiteral(rows, (r) => r.id),
  arrayLiteral(rows, (r) => r.companyId),
  arrayLiteral(rows, (r) => r.clientId),
  arrayLiteral(rows, (r) => r.claimDate),
  arrayLiteral(rows, (r) => r.claimType),
  arrayLiteral(rows, (r) => r.amount),
  arrayLiteral(rows, (r) => r.atFault),
  jsonArray(rows, (r) => r.plate),
  arrayLiteral(rows, (r) => r.source),
  arrayLiteral(rows, (r) => r.status),
  arrayLiteral(rows, (r) => r.importId),
];

/** COPY's text format: tab-separated, `\N` for null; none of these values holds a tab, newline or backslash. */
const copyText = (rows: Row[]) =>
  rows
    .map((r) =>
      [r.id, r.companyId, r.clientId, r.claimDate, r.claimType, r.amount, r.atFault, r.plate, r.source, r.status, r.importId].join('\t'),
    )
    .join('\n') + '\n';

async function copyInto(tx: postgres.TransactionSql, table: string, text: string) {
  const stream = await tx.unsafe(`COPY ${table} (${COLUMNS}) FROM STDIN`).writable();
  await new Promise<void>((resolve, reject) => {
    stream.on('error', reject);
    stream.on('finish', resolve);
    stream.end(text);
  });
}

type Way = { name: string; write(sql: postgres.Sql, rows: Row[], built: { ms: number }): Promise<void> };

const ways: Way[] = [
  {
    name: 'parameters (the project)',
    async write(sql, rows, built) {
      const t0 = performance.now();
      const p = params(rows);
      built.ms += performance.now() - t0;
      await sql.begin((tx) => tx.unsafe(INSERT_PARAMS, p));
    },
  },
  {
    name: 'COPY into the table',
    async write(sql, rows, built) {
      const t0 = performance.now();
      const text = copyText(rows);
      built.ms += performance.now() - t0;
      await sql.begin((tx) => copyInto(tx, 't', text));
    },
  },
  {
    name: 'COPY into staging + INSERT..SELECT',
    async write(sql, rows, built) {
      const t0 = performance.now();
      const text = copyText(rows);
      built.ms += performance.now() - t0;
      await sql.begin(async (tx) => {
        await copyInto(tx, 'staging', text);
        await tx.unsafe(`INSERT INTO t (${COLUMNS}) SELECT ${COLUMNS} FROM staging`);
      });
    },
  },
];

async function main() {
  const url = process.env.BENCH_DATABASE_URL;
  if (!url) throw new Error('BENCH_DATABASE_URL is required');
  // BENCH_NODELAY=1: the connection's socket without Nagle's algorithm (the driver leaves it on;
  // a COPY's last small message then waits for the server's delayed acknowledgement).
  const noDelay = process.env.BENCH_NODELAY === '1';
  const { hostname, port } = new URL(url);
  const socket = () =>
    new Promise<net.Socket>((resolve, reject) => {
      const s = net.connect(Number(port || 5432), hostname, () => resolve(s.setNoDelay(true)));
      s.once('error', reject);
    });
  const sql = postgres(url, { max: 1, onnotice: () => {}, ...(noDelay ? { socket } : {}) });
  console.log(`Nagle's algorithm ${noDelay ? 'off' : "on (the driver's default)"}`);
  try {
    await sql.unsafe(`CREATE TEMP TABLE t ${TABLE}`);
    await sql.unsafe(`CREATE TEMP TABLE staging ${TABLE} ON COMMIT DELETE ROWS`);
    const chunks = Array.from({ length: CHUNKS }, () => chunkOf(randomUUID(), randomUUID()));
    const times = new Map<string, number[]>(ways.map((w) => [w.name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const way of ways) {
        await sql.unsafe('TRUNCATE t');
        const built = { ms: 0 };
        const t0 = performance.now();
        for (const rows of chunks) await way.write(sql, rows, built);
        const ms = performance.now() - t0;
        times.get(way.name)!.push(ms);
        console.log(
          `round ${round + 1}  ${way.name.padEnd(36)} ${(ms / 1000).toFixed(2)} s  (building: ${(built.ms / 1000).toFixed(2)} s)`,
        );
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const base = median(times.get(ways[0]!.name)!);
    console.log(`\n${CHUNKS} chunks of ${ROWS} rows, medians of ${ROUNDS} rounds:`);
    for (const way of ways) {
      const m = median(times.get(way.name)!);
      console.log(`  ${way.name.padEnd(36)} ${(m / 1000).toFixed(2)} s  ${(m / base).toFixed(2)}x`);
    }
  } finally {
    await sql.end();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
