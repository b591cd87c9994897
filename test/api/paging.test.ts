import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { csv, plate, postImport, validRow } from '../import-helpers';
import { createTestContext, submitClaim, type Company, type TestContext } from '../harness';

/**
 * Every keyset list reaches every row, also when many rows were written by one statement and so
 * share `created_at` to the microsecond: the cursor's position must reach the database with its
 * microseconds (a driver that sends it through a JavaScript Date keeps milliseconds, and the next
 * page would skip the rest of that millisecond).
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx.close());

const ROWS = 150;

/** Every row of a list, following `meta.next_cursor` with `limit=25`; fails on a repeated id. */
async function pageThrough(company: Company, path: string): Promise<{ id?: string }[]> {
  const rows: { id?: string }[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const url: string = `${path}${sep}limit=25${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const res = await ctx.app.inject({ method: 'GET', url, headers: company.auth });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json<{ data: { id?: string }[]; meta: { next_cursor: string | null } }>();
    expect(body.data.length).toBeLessThanOrEqual(25);
    rows.push(...body.data);
    cursor = body.meta.next_cursor;
    pages += 1;
    expect(pages).toBeLessThan(20);
  } while (cursor);
  const ids = rows.flatMap((r) => (r.id ? [r.id] : []));
  expect(new Set(ids).size).toBe(ids.length);
  return rows;
}

/** Runs `sql` (one statement) and checks that its rows share one created_at. */
async function oneStatement(sql: string, params: unknown[], table: string, companyId: string): Promise<void> {
  await ctx.deps.db.query(sql, params);
  const [row] = await ctx.deps.db.query<{ n: number; at: number }>(
    `SELECT count(*)::int AS n, count(DISTINCT created_at)::int AS at FROM ${table} WHERE company_id = $1`,
    [companyId],
  );
  expect(row).toEqual({ n: ROWS, at: 1 });
}

describe(`every list pages through ${ROWS} rows written in one statement, 25 at a time`, () => {
  it('claims and alerts (an import of one file, matching one claim of another company)', async () => {
    const [importer, told] = [await ctx.newCompany(), await ctx.newCompany()];
    const shared = plate();
    const claim = await submitClaim(ctx, told, { vehicle_registration: shared });
    const res = await postImport(
      ctx.app,
      importer.auth,
      csv(Array.from({ length: ROWS }, () => validRow({ vehicle_registration: shared }))),
    );
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ imported: ROWS, failed: 0 });

    expect(await pageThrough(importer, '/api/v1/claims')).toHaveLength(ROWS);
    expect(await pageThrough(told, `/api/v1/alerts?claim_id=${claim.id}`)).toHaveLength(ROWS);
    expect(await pageThrough(told, '/api/v1/alerts')).toHaveLength(ROWS);
  });

  it('imports', async () => {
    const company = await ctx.newCompany();
    await oneStatement(
      `INSERT INTO imports (id, company_id, status, file_name, object_key, size_bytes)
       SELECT gen_random_uuid(), $1, 'completed', 'f' || n || '.csv', 'gone/' || n, 0 FROM generate_series(1, ${ROWS}) n`,
      [company.id],
      'imports',
      company.id,
    );
    expect(await pageThrough(company, '/api/v1/imports')).toHaveLength(ROWS);
  });

  it("look-ups, and a claim's look-ups", async () => {
    const [owner, searcher] = [await ctx.newCompany(), await ctx.newCompany()];
    const claim = await submitClaim(ctx, owner);
    await oneStatement(
      `INSERT INTO lookups (id, company_id, kind, vehicle_registration, plate_key, claim_ids, result_count)
       SELECT gen_random_uuid(), $1, 'plate_search', $2, $2, ARRAY[$3::uuid], 1 FROM generate_series(1, ${ROWS})`,
      [searcher.id, claim.vehicle_registration, claim.id],
      'lookups',
      searcher.id,
    );
    expect(await pageThrough(searcher, '/api/v1/lookups')).toHaveLength(ROWS);
    // A claim's look-ups show the company, kind and time only (no id): 150 rows of one company.
    const seen = await pageThrough(owner, `/api/v1/claims/${claim.id}/lookups`);
    expect(seen).toHaveLength(ROWS);
    expect(new Set(seen.map((r) => JSON.stringify(r)))).toEqual(new Set([JSON.stringify(seen[0])]));
  });
});
