// Rules of the API contract (docs/api.md: Requests, Rules, Errors, CSV import) that were implemented but not pinned by a test.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { minusYears } from '../../src/domain/dates';
import { claimBody, createTestContext, type TestContext } from '../harness';
import { csv, plate, postImport, validRow } from '../import-helpers';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx?.close());

type Company = Awaited<ReturnType<TestContext['newCompany']>>;
const dayBefore = (iso: string): string => new Date(Date.parse(`${iso}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10);

const search = async (c: TestContext, company: Company, vehicle_registration: string) =>
  (
    await c.app.inject({ method: 'POST', url: '/api/v1/claims/search-by-plate', headers: company.auth, payload: { vehicle_registration } })
  ).json();

describe('CSV import header (docs/api.md: CSV import)', () => {
  it('rejects a header without vehicle_registration with a 422 that names it (a required column here)', async () => {
    const company = await ctx.newCompany();
    const columns = ['first_name', 'last_name', 'date_of_birth', 'id_type', 'id_number', 'claim_date'];
    const res = await postImport(ctx.app, company.auth, csv([validRow()], { columns }));
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().errors.file).toEqual(['The header row is missing the required column: vehicle_registration.']);
  });

  it('accepts a header of the required columns only: the optional columns may be left out', async () => {
    const company = await ctx.newCompany();
    const columns = ['first_name', 'last_name', 'date_of_birth', 'id_type', 'id_number', 'claim_date', 'vehicle_registration'];
    const row = validRow();
    const res = await postImport(ctx.app, company.auth, csv([row], { columns }));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      id: expect.any(String),
      message: 'Import finished: 1 imported, 0 failed.',
      imported: 1,
      failed: 0,
      errors: [],
    });
    const [claim] = (await search(ctx, company, row.vehicle_registration!)).data;
    expect(claim).toMatchObject({
      status: 'filed',
      currency: 'EUR',
      amount: null,
      claim_type: null,
      is_at_fault: null,
      source: 'bulk_import',
    });
  });
});

describe('CSV import status column (docs/api.md: CSV import, initial status)', () => {
  it('uses a given status, and reports an unknown status as a row error on status', async () => {
    const company = await ctx.newCompany();
    const settled = validRow({ status: 'settled' });
    const disputed = validRow({ status: 'disputed' });
    const res = await postImport(ctx.app, company.auth, csv([settled, validRow({ status: 'open' }), disputed]));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ imported: 2, failed: 1 });
    expect(res.json().errors).toEqual([
      { row: 3, messages: { status: ['The status field must be one of: filed, under_investigation, settled, closed, disputed.'] } },
    ]);
    expect((await search(ctx, company, settled.vehicle_registration!)).data[0].status).toBe('settled');
    expect((await search(ctx, company, disputed.vehicle_registration!)).data[0].status).toBe('disputed');
  });

  it('reports an empty required cell (vehicle_registration) as a row error on that column', async () => {
    const company = await ctx.newCompany();
    const res = await postImport(ctx.app, company.auth, csv([validRow({ vehicle_registration: '' })]));
    expect(res.json()).toMatchObject({ imported: 0, failed: 1 });
    expect(Object.keys(res.json().errors[0].messages)).toEqual(['vehicle_registration']);
  });
});

describe('status changes record when (docs/api.md: every status change is recorded with who, when, from and to)', () => {
  it('stamps every recorded change with the time it was made', async () => {
    const company = await ctx.newCompany();
    const created = await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: claimBody() });
    expect(created.statusCode, created.body).toBe(201);
    const id = created.json().data.id;
    const before = Date.now();
    const res = await ctx.app.inject({
      method: 'PATCH',
      url: `/api/v1/claims/${id}/status`,
      headers: company.auth,
      payload: { status: 'closed' },
    });
    expect(res.statusCode).toBe(200);
    const after = Date.now();
    const rows = await ctx.deps.db.query<{ changed_at: unknown }>('SELECT changed_at FROM claim_status_changes WHERE claim_id = $1', [id]);
    expect(rows).toHaveLength(1);
    const at = new Date(rows[0]!.changed_at as string | Date).getTime();
    expect(Number.isFinite(at)).toBe(true);
    expect(at).toBeGreaterThanOrEqual(before - 2_000);
    expect(at).toBeLessThanOrEqual(after + 2_000);
  });
});

// Kiritimati is UTC+14 and Pago Pago UTC-11: at any hour one of them is on another date than UTC,
// so a window computed from the UTC date would move the boundary by a day in at least one of them.
describe.each(['Pacific/Kiritimati', 'Pacific/Pago_Pago'])('search window with APP_TIMEZONE=%s and SEARCH_HISTORY_YEARS=1', (timeZone) => {
  let zoned: TestContext;
  beforeAll(async () => {
    zoned = await createTestContext({ APP_TIMEZONE: timeZone, SEARCH_HISTORY_YEARS: '1' });
  });
  afterAll(async () => zoned?.close());

  it("counts the window from today's date in that time zone: the boundary day is in, the day before is out", async () => {
    const company = await zoned.newCompany();
    const p = plate();
    const boundary = minusYears(zoned.deps.today(), 1);
    for (const claim_date of [boundary, dayBefore(boundary)]) {
      const res = await zoned.app.inject({
        method: 'POST',
        url: '/api/v1/claims',
        headers: company.auth,
        payload: claimBody({ claim_date, vehicle_registration: p }),
      });
      expect(res.statusCode, res.body).toBe(201);
    }
    const result = await search(zoned, company, p);
    expect(result.data.map((c: { claim_date: string }) => c.claim_date)).toEqual([boundary]);
    expect(result.meta).toEqual({ total_claims: 1, query_period: '1 year' });
  });
});
