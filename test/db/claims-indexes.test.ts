import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, dbKind, type TestContext } from '../harness';

/**
 * Each index of the claims table is one more insert for every claim written: each states the
 * query that needs it (migration 0028), so that an index added without a reason fails here.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => {
  await ctx.close();
});

describe(`the claims table's indexes (${dbKind()})`, () => {
  it('each states the query that needs it', async () => {
    const indexes = await ctx.deps.db.query<{ name: string; need: string | null }>(
      `SELECT i.indexrelid::regclass::text AS name, obj_description(i.indexrelid, 'pg_class') AS need
         FROM pg_index i
        WHERE i.indrelid = 'claims'::regclass
        ORDER BY 1`,
    );
    expect(indexes.map((i) => i.name)).toEqual([
      'claims_client_idx',
      'claims_company_claim_date_idx',
      'claims_company_created_idx',
      'claims_company_plate_idx',
      'claims_pkey',
      'claims_plate_date_idx',
    ]);
    for (const index of indexes) expect(index.need, index.name).toMatch(/\w{4,}.*\w{4,}/);
  });
});
