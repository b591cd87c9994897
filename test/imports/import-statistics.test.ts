import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, type TestContext } from '../harness';
import { csv, postImport, validRow } from '../import-helpers';

/**
 * The embedded database (PGlite) runs no autovacuum, so nothing else brings the planner's
 * statistics up to date: without them, the completion's match alerts and every later search are
 * planned as if the claims table were empty. A context of its own: the claims table holds this
 * file's claims only.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx?.close());

/** The number of claims the planner's statistics count (-1: never counted). */
const countedClaims = async () =>
  (await ctx.deps.db.query<{ n: number }>(`SELECT reltuples::int AS n FROM pg_class WHERE oid = 'claims'::regclass`))[0]!.n;
const importRows = async (company: Awaited<ReturnType<TestContext['newCompany']>>, n: number) => {
  const res = await postImport(ctx.app, company.auth, csv(Array.from({ length: n }, () => validRow())));
  expect(res.statusCode, res.body).toBe(200);
  expect(res.json()).toMatchObject({ imported: n, failed: 0 });
  const [run] = await ctx.deps.db.query<{ id: string }>('SELECT id FROM imports WHERE company_id = $1 ORDER BY created_at DESC LIMIT 1', [
    company.id,
  ]);
  return run!.id;
};

describe('the planner statistics after an import', () => {
  it('embedded, counts the claims of an import that grows them by more than a tenth before completing it, and not those of a small one', async () => {
    const company = await ctx.newCompany('Statistics');
    const before = await countedClaims();
    const first = await importRows(company, 60);
    if (ctx.deps.db.kind === 'pglite') {
      expect(before).toBe(-1);
      expect(await countedClaims()).toBe(60);
      // 10 claims more is under 50 + a tenth of 60: the statistics stay as they were.
      await importRows(company, 10);
      expect(await countedClaims()).toBe(60);
    } else {
      // PostgreSQL's autovacuum keeps them: the import leaves them alone.
      expect(await ctx.deps.repos.imports.refreshStatistics(first)).toBe(false);
    }
  });
});
