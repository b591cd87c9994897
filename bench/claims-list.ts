/**
 * The dashboard's claims list at 1,000,000 claims of one company: `npm run bench:claims-list --
 * --database-url postgres://…`. Creates a throw-away schema, migrates it, writes the claims with
 * one INSERT … SELECT from generate_series (300,000 clients, each with a passport; claim dates over
 * three years; a tenth of the claims in a completed import), runs ANALYZE, then times each list
 * query (the page and its total, as the page runs them) a few times and prints the median, with
 * EXPLAIN (ANALYZE, BUFFERS) of the page statement. The schema is dropped at the end. `--drop-index
 * NAME` (repeatable) drops an index after the migration, to see what it is worth.
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';

import { createDashboardRepository } from '../src/db/dashboard-repository';
import { openDb } from '../src/db/db';
import { migrate } from '../src/db/migrate';
import type { ClaimListFilter, ClaimListSeek, ClaimListSort } from '../src/domain/dashboard/dashboard-repository';

const { values } = parseArgs({
  options: { 'database-url': { type: 'string' }, claims: { type: 'string' }, 'drop-index': { type: 'string', multiple: true } },
});
const url = values['database-url'] ?? process.env.DATABASE_URL;
if (!url) throw new Error('--database-url is required');
const CLAIMS = Number(values.claims ?? 1_000_000);
const CLIENTS = Math.max(1, Math.round(CLAIMS * 0.3));
const schema = `bench_list_${randomBytes(4).toString('hex')}`;

async function main() {
  const admin = await openDb({ kind: 'postgres', url: url!, poolSize: 1 });
  await admin.exec(`CREATE SCHEMA ${schema}`);
  const db = await openDb({ kind: 'postgres', url: url!, poolSize: 2, searchPath: schema });
  try {
    await migrate(db);
    // --drop-index NAME: the same figures without an index, to see what it is worth.
    for (const index of values['drop-index'] ?? []) await db.exec(`DROP INDEX ${index}`);
    const started = Date.now();
    await db.exec(`
      INSERT INTO companies (id, name) VALUES ('00000000-0000-4000-8000-000000000001', 'Bench'), ('00000000-0000-4000-8000-000000000002', 'Other');
      INSERT INTO imports (id, company_id, status, file_name, object_key, size_bytes) VALUES
        ('00000000-0000-4000-8000-0000000000aa', '00000000-0000-4000-8000-000000000001', 'completed', 'bench.csv', 'x', 0);
      INSERT INTO clients (id, first_name, last_name, date_of_birth)
        SELECT ('00000000-0000-4000-9000-' || lpad(to_hex(g), 12, '0'))::uuid,
               (ARRAY['Ona','Jonas','Rūta','Mantas','Ieva','Tomas','Greta','Lukas','Eglė','Paulius'])[1 + g % 10],
               (ARRAY['Petraitė','Jonaitis','Kazlauskas','Vasiliauskas','Žukauskaitė','Butkus','Paulauskas','Urbonaitė'])[1 + (g / 10) % 8] || (g % 997)::text,
               date '1950-01-01' + (g % 18000)
          FROM generate_series(1, ${CLIENTS}) g;
      INSERT INTO identity_documents (doc_type, number_hash, client_id)
        SELECT 'passport', md5(g::text), ('00000000-0000-4000-9000-' || lpad(to_hex(g), 12, '0'))::uuid FROM generate_series(1, ${CLIENTS}) g;
      INSERT INTO claims (id, company_id, client_id, claim_date, claim_type, amount, vehicle_registration, source, status, import_id, created_at)
        SELECT gen_random_uuid(), '00000000-0000-4000-8000-000000000001',
               ('00000000-0000-4000-9000-' || lpad(to_hex(1 + g % ${CLIENTS}), 12, '0'))::uuid,
               current_date - (g::bigint * 7919 % 1095)::int, 'accident', (g % 5000)::numeric,
               'AB' || lpad((g % 99991)::text, 5, '0'),
               (ARRAY['api','bulk_import','assisted'])[1 + g % 3],
               (ARRAY['filed','under_investigation','settled','closed','disputed'])[1 + g % 5],
               CASE WHEN g % 10 = 0 THEN '00000000-0000-4000-8000-0000000000aa'::uuid END,
               now() - make_interval(secs => g)
          FROM generate_series(1, ${CLAIMS}) g;`);
    // Separately: a multi-statement script runs in one transaction, which VACUUM refuses.
    for (const table of ['claims', 'clients', 'imports', 'identity_documents']) await db.exec(`VACUUM ANALYZE ${table}`);
    console.log(`seeded ${CLAIMS.toLocaleString('en-GB')} claims in ${((Date.now() - started) / 1000).toFixed(1)} s`);

    const repo = createDashboardRepository(db);
    const company = '00000000-0000-4000-8000-000000000001';
    const first = await repo.listClaims(company, {}, 'claim_date', { kind: 'first' }, 25);
    const deep: ClaimListSeek = { kind: 'after', key: first.at(-1)!.key, skip: 50 };
    const cases: [string, ClaimListFilter, ClaimListSort, ClaimListSeek][] = [
      ['no filter, first page', {}, 'claim_date', { kind: 'first' }],
      ['no filter, by registration', {}, 'registered', { kind: 'first' }],
      ['no filter, last page', {}, 'claim_date', { kind: 'last' }],
      ['no filter, jump of 2 pages', {}, 'claim_date', deep],
      ['status', { status: 'disputed' }, 'claim_date', { kind: 'first' }],
      ['source', { source: 'assisted' }, 'claim_date', { kind: 'first' }],
      ['plate prefix', { plate: 'AB0123' }, 'claim_date', { kind: 'first' }],
      ['client name', { name: 'ona petr' }, 'claim_date', { kind: 'first' }],
      ['claim date range (1 month)', { from: isoDaysAgo(60), to: isoDaysAgo(30) }, 'claim_date', { kind: 'first' }],
      [
        'status + dates + source',
        { status: 'settled', source: 'api', from: isoDaysAgo(365), to: isoDaysAgo(0) },
        'claim_date',
        { kind: 'first' },
      ],
    ];
    console.log('| Query | page (ms, median of 5) | total (ms, median of 5) | rows | total |');
    console.log('|---|---|---|---|---|');
    const explains: string[] = [];
    for (const [name, filter, sort, seek] of cases) {
      const pageTimes: number[] = [];
      const countTimes: number[] = [];
      let rows = 0;
      let total = 0;
      for (let i = 0; i < 6; i++) {
        const t0 = performance.now();
        rows = (await repo.listClaims(company, filter, sort, seek, 25)).length;
        const t1 = performance.now();
        total = await repo.countClaims(company, filter);
        const t2 = performance.now();
        if (i > 0) {
          pageTimes.push(t1 - t0);
          countTimes.push(t2 - t1);
        }
      }
      console.log(
        `| ${name} | ${median(pageTimes).toFixed(1)} | ${median(countTimes).toFixed(1)} | ${rows} | ${total.toLocaleString('en-GB')} |`,
      );
      explains.push(`-- ${name}`);
    }
    // EXPLAIN of the page and the total with the widest filter, through the same SQL text.
    const spy: string[] = [];
    const traced = createDashboardRepository({
      query: async <T>(text: string, params?: readonly unknown[]) => {
        const plan = await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, params);
        spy.push(plan.map((r) => r['QUERY PLAN']).join('\n'));
        return [] as T[];
      },
      exec: async () => {},
    });
    for (const [name, filter] of [
      ['no filter', {}],
      ['client name', { name: 'ona petr' }],
      ['status + dates + source', { status: 'settled', source: 'api', from: isoDaysAgo(365), to: isoDaysAgo(0) }],
    ] as [string, ClaimListFilter][]) {
      spy.length = 0;
      await traced.listClaims(company, filter, 'claim_date', { kind: 'first' }, 25);
      await traced.countClaims(company, filter).catch(() => 0);
      console.log(`\nEXPLAIN, ${name}: the page\n${spy[0]}\n\nEXPLAIN, ${name}: the total\n${spy[1] ?? ''}`);
    }
  } finally {
    await db.close();
    await admin.exec(`DROP SCHEMA ${schema} CASCADE`);
    await admin.close();
  }
}

function isoDaysAgo(days: number): string {
  return new Date(Date.now() - days * 86_400_000).toISOString().slice(0, 10);
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
