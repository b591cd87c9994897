/**
 * Prints EXPLAIN (ANALYZE) of the registry's statements exactly as the repository sends them:
 * matches of a claim, search by person, a page of look-ups (first and with a cursor), who looked
 * at a claim. Runs them for real (the look-up log gets its rows), so point it at a bench database.
 *
 *   BENCH_DATABASE_URL=postgres://…/<seeded db> BENCH_DOCUMENT_HASH_KEY=<its key> npx tsx bench/registry-explain.ts
 */

import { openDb, type Db } from '../src/db/db';
import { createRegistryRepository } from '../src/db/registry-repository';
import { createDocumentHasher } from '../src/domain/clients/identity';
import { minusYears, todayIn } from '../src/domain/dates';
import { logSince } from '../src/domain/registry/registry';

const url = process.env.BENCH_DATABASE_URL;
const key = process.env.BENCH_DOCUMENT_HASH_KEY;
if (!url || !key) {
  console.error('Set BENCH_DATABASE_URL and BENCH_DOCUMENT_HASH_KEY.');
  process.exit(2);
}
const db = await openDb({ kind: 'postgres', url, poolSize: 1 });
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
try {
  const [company] = await db.query<{ company_id: string; id: string }>(
    `SELECT c.company_id, c.id FROM claims c JOIN companies co ON co.id = c.company_id WHERE co.name = 'Perf Bench Insurance' LIMIT 1`,
  );
  if (!company) throw new Error('no claim of the bench company');
  const from = minusYears(todayIn('UTC'), 3);
  label = 'matches';
  await repo.matches(company.id, company.company_id, from, 'UTC');
  label = 'search by person (a seeded person, right date of birth)';
  const hash = createDocumentHasher(key);
  const dob42 = new Date(Date.UTC(1940, 0, 1) + ((42 * 7919) % 25000) * 86_400_000).toISOString().slice(0, 10);
  // The shim returns no rows, which the repository does not expect of this statement: only the plan matters here.
  const planOnly = (p: Promise<unknown>) => p.catch(() => undefined);
  await planOnly(repo.searchByPerson([{ type: 'national_id', hash: hash('NID000000042') }], dob42, from));
  label = 'search by person (unknown document)';
  await planOnly(repo.searchByPerson([{ type: 'national_id', hash: hash('NOBODY') }], '1940-01-01', from));
  const since = logSince(new Date(), 730);
  label = 'look-ups, first page';
  await repo.listLookups(company.company_id, { after: undefined, limit: 26, since });
  const [mid] = await db.query<{ ts: string; id: string }>(
    `SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS ts, id FROM lookups WHERE company_id = $1
      ORDER BY created_at DESC, id DESC OFFSET 1000 LIMIT 1`,
    [company.company_id],
  );
  if (mid) {
    label = 'look-ups, a page 1,000 entries deep (cursor)';
    await repo.listLookups(company.company_id, { after: mid, limit: 26, since });
  }
  const [looked] = await db.query<{ claim_id: string; company_id: string }>(
    `SELECT c.id AS claim_id, c.company_id FROM lookups l JOIN claims c ON c.id = l.claim_ids[1] LIMIT 1`,
  );
  if (looked) {
    label = 'who looked at a claim';
    await repo.claimLookups(looked.claim_id, looked.company_id, { after: undefined, limit: 26, since });
  }
} finally {
  await db.close();
}
