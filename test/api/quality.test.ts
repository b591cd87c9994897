import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { addDays, claimBody, createTestContext, submitClaim, type Company, type TestContext } from '../harness';
import { csv, futureDate, postImport, recentDate, validRow } from '../import-helpers';

/** GET /api/v1/quality (DECISIONS, "Data quality"): the caller's company's own figures over a period. */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx?.close());

const quality = (company: Company, query = '') => ctx.app.inject({ method: 'GET', url: `/api/v1/quality${query}`, headers: company.auth });

describe('GET /api/v1/quality', () => {
  it("gives the period's claims by source, missing-field shares, filing delay and the imports' rejection rate", async () => {
    const [me, other] = [await ctx.newCompany('Quality'), await ctx.newCompany('Quality other')];
    const today = ctx.deps.today();
    // API: delays 2, 10, 30 days; one without claim_type and amount.
    await submitClaim(ctx, me, { claim_date: addDays(today, -2) });
    await submitClaim(ctx, me, { claim_date: addDays(today, -10), claim_type: null, amount: null });
    await submitClaim(ctx, me, { claim_date: addDays(today, -30), is_at_fault: true });
    // An import: 3 stored (delay 30 each: recentDate()), 1 rejected, no is_at_fault on one.
    const res = await postImport(
      ctx.app,
      me.auth,
      csv([validRow(), validRow(), validRow({ is_at_fault: '' }), validRow({ claim_date: futureDate() })]),
    );
    expect(res.json()).toMatchObject({ imported: 3, failed: 1 });
    // Another company's data counts nowhere here.
    await submitClaim(ctx, other, { claim_date: addDays(today, -300) });
    await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: other.auth, payload: claimBody({ amount: null }) });

    const got = await quality(me);
    expect(got.statusCode, got.body).toBe(200);
    expect(got.json()).toEqual({
      data: {
        period_days: 90,
        claims_stored: 6,
        by_source: { api: 3, bulk_import: 3, assisted: 0 },
        import_rows_rejected: 1,
        import_rejection_rate: 0.25,
        // claim_type: 1 of 6; amount: 1 of 6; is_at_fault: unset on the 2 API claims without it (claimBody sends none) and 1 row.
        missing: { claim_type: 0.1667, amount: 0.1667, is_at_fault: 0.5 },
        filing_delay_days: { p50: 30, p90: 30 },
      },
    });
    expect(recentDate()).toBe(addDays(today, -30));
  });

  it('counts only claims registered within the period, and answers zeros for a company with none', async () => {
    const me = await ctx.newCompany('Quality period');
    const old = await submitClaim(ctx, me, { claim_date: addDays(ctx.deps.today(), -200) });
    await ctx.deps.db.query(`UPDATE claims SET created_at = now() - interval '100 days' WHERE id = $1`, [old.id]);
    expect((await quality(me, '?days=90')).json().data).toEqual({
      period_days: 90,
      claims_stored: 0,
      by_source: { api: 0, bulk_import: 0, assisted: 0 },
      import_rows_rejected: 0,
      import_rejection_rate: 0,
      missing: { claim_type: 0, amount: 0, is_at_fault: 0 },
      filing_delay_days: { p50: null, p90: null },
    });
    expect((await quality(me, '?days=365')).json().data).toMatchObject({
      period_days: 365,
      claims_stored: 1,
      filing_delay_days: { p50: 100, p90: 100 },
    });
  });

  it('answers 422 for days outside 1-365 or not a whole number, and 401 without a token', async () => {
    const me = await ctx.newCompany('Quality bad');
    for (const q of ['?days=0', '?days=366', '?days=abc', '?days=1.5']) {
      const res = await quality(me, q);
      expect(res.statusCode, q).toBe(422);
      expect(res.json()).toMatchObject({ code: 'validation_failed', errors: { days: expect.any(Array) } });
    }
    expect((await ctx.app.inject({ method: 'GET', url: '/api/v1/quality' })).statusCode).toBe(401);
  });
});
