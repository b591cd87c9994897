import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { addDays, createTestContext, submitClaim, type Company, type TestContext } from '../harness';
import { plate, postLookupBatch } from '../import-helpers';

/**
 * Batch plate look-ups (DECISIONS, "Alerts, batch look-ups and data quality"): upload, job, status,
 * results.csv, the look-up log, tenant isolation and the import's file errors. Embedded, the job
 * runs in-process (BullMQ mode: test/integration/lookup-batch-bullmq.test.ts).
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx?.close());

const upload = (company: Company, content: string | Buffer, opts: Parameters<typeof postLookupBatch>[3] = {}) =>
  postLookupBatch(ctx.app, company.auth, content, opts);
const get = (company: Company, url: string) => ctx.app.inject({ method: 'GET', url, headers: company.auth });
/** Polls the batch until its job has finished; its state then. */
async function completed(company: Company, id: string) {
  await expect
    .poll(async () => (await get(company, `/api/v1/lookups/batch/${id}`)).json().data.status, { timeout: 30_000 })
    .toMatch(/^(completed|failed)$/u);
  return (await get(company, `/api/v1/lookups/batch/${id}`)).json().data;
}

describe('POST /api/v1/lookups/batch', () => {
  it('answers 202 with Location, then completes with one results line per distinct normalized plate, in file order', async () => {
    const [me, other] = [await ctx.newCompany('Batcher'), await ctx.newCompany('Other')];
    const [p, q, none] = [plate(), plate(), plate()];
    const today = ctx.deps.today();
    await submitClaim(ctx, other, { vehicle_registration: p, claim_date: addDays(today, -40) });
    await submitClaim(ctx, other, { vehicle_registration: p, claim_date: addDays(today, -5) });
    await submitClaim(ctx, me, { vehicle_registration: p, claim_date: addDays(today, -9) });
    await submitClaim(ctx, me, { vehicle_registration: q, claim_date: addDays(today, -20) });
    const file = [
      'policy;vehicle_registration;note',
      `1;${q.toLowerCase()};x`,
      `2;${p.slice(0, 3)}-${p.slice(3)};"a; quoted"`,
      '',
      `3;${none};`,
      `4;${q};dup`,
      '5;#!?;bad',
    ].join('\r\n');
    const res = await upload(me, file, { purpose: 'Renewals' });
    expect(res.statusCode, res.body).toBe(202);
    const { data } = res.json();
    expect(res.headers.location).toBe(`/api/v1/lookups/batch/${data.id}`);
    expect(data).toMatchObject({ id: expect.any(String), status: expect.stringMatching(/^(queued|processing|completed)$/u), plates: 5 });

    const done = await completed(me, data.id);
    expect(done).toMatchObject({ status: 'completed', plates: 5, rows_done: 5, distinct_plates: 3, invalid_rows: 1, purpose: 'Renewals' });
    const csv = await get(me, `/api/v1/lookups/batch/${data.id}/results.csv`);
    expect(csv.statusCode).toBe(200);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(csv.body).toBe(
      [
        'vehicle_registration,claims,companies,latest_claim_date',
        `${q},1,1,${addDays(today, -20)}`,
        `${p},3,2,${addDays(today, -5)}`,
        `${none},0,0,`,
        '',
      ].join('\r\n'),
    );

    // Each distinct plate is a plate_search in the caller's look-up log, with the purpose and its result count.
    await ctx.deps.lookupJournal.flush();
    const log = (await get(me, '/api/v1/lookups?limit=100')).json().data as {
      kind: string;
      vehicle_registration: string;
      result_count: number;
      purpose: string;
    }[];
    const searches = log.filter((l) => l.kind === 'plate_search');
    expect(searches.map((l) => [l.vehicle_registration, l.result_count, l.purpose]).sort()).toEqual(
      [
        [q, 1, 'Renewals'],
        [p, 3, 'Renewals'],
        [none, 0, 'Renewals'],
      ].sort(),
    );
    // The other company sees that the batch returned its claims.
    const theirs = (await get(other, '/api/v1/claims?limit=10')).json().data[0];
    expect((await get(other, `/api/v1/claims/${theirs.id}/lookups`)).json().data).toEqual([
      expect.objectContaining({ company_name: me.name, kind: 'plate_search' }),
    ]);
  });

  it('looks a file of several chunks up with the figures of a single one: a plate repeated in a later chunk counts once, at its first row', async () => {
    const [me, other, third] = [await ctx.newCompany('Chunked'), await ctx.newCompany('Other'), await ctx.newCompany('Third')];
    const [p, q] = [plate(), plate()];
    const today = ctx.deps.today();
    const theirs = await submitClaim(ctx, other, { vehicle_registration: p, claim_date: addDays(today, -3) });
    await submitClaim(ctx, third, { vehicle_registration: p, claim_date: addDays(today, -8) });
    await submitClaim(ctx, other, { vehicle_registration: q, claim_date: addDays(today, -1) });
    // 12,000 rows: three chunks (BATCH_CHUNK is 5,000). q in the first and the third, p in the second and the third.
    const rows = Array.from({ length: 12_000 }, (_, i) => `FILL${i}`);
    rows[1] = q;
    rows[5_999] = p.toLowerCase();
    rows[10_999] = p;
    rows[11_000] = q;
    const res = await upload(me, ['vehicle_registration', ...rows].join('\n'), { purpose: 'Chunks' });
    expect(res.statusCode, res.body).toBe(202);

    const done = await completed(me, res.json().data.id);
    expect(done).toMatchObject({ status: 'completed', plates: 12_000, rows_done: 12_000, distinct_plates: 11_998, invalid_rows: 0 });
    const lines = (await get(me, `/api/v1/lookups/batch/${done.id}/results.csv`)).body.trimEnd().split('\r\n');
    expect(lines).toHaveLength(1 + 11_998);
    expect(lines[2]).toBe(`${q},1,1,${addDays(today, -1)}`);
    expect(lines[6_000]).toBe(`${p},2,2,${addDays(today, -3)}`);
    expect(lines.filter((l) => l.startsWith(`${p},`) || l.startsWith(`${q},`))).toHaveLength(2);
    expect(lines.slice(1).every((l) => /^[A-Z0-9]+,\d+,\d+,(\d{4}-\d{2}-\d{2})?$/u.test(l))).toBe(true);
    // One look-up entry per distinct plate: the owner of p's claim sees one plate_search of it, not two.
    expect((await get(other, `/api/v1/claims/${theirs.id}/lookups`)).json().data).toEqual([
      expect.objectContaining({ company_name: me.name, kind: 'plate_search' }),
    ]);
  });

  it("is a 404 for another company's batch, an unknown id and a non-UUID", async () => {
    const [me, other] = [await ctx.newCompany('Owner'), await ctx.newCompany('Snoop')];
    const { data } = (await upload(me, `vehicle_registration\n${plate()}\n`)).json();
    await completed(me, data.id);
    for (const url of [`/api/v1/lookups/batch/${data.id}`, `/api/v1/lookups/batch/${data.id}/results.csv`]) {
      const res = await get(other, url);
      expect(res.statusCode, url).toBe(404);
      expect(res.json()).toMatchObject({ message: 'Batch not found.', code: 'not_found' });
    }
    expect((await get(me, '/api/v1/lookups/batch/00000000-0000-4000-8000-000000000000')).statusCode).toBe(404);
    expect((await get(me, '/api/v1/lookups/batch/nope')).statusCode).toBe(404);
    expect((await ctx.app.inject({ method: 'GET', url: `/api/v1/lookups/batch/${data.id}` })).statusCode).toBe(401);
  });

  it("answers a bad file with the import's file errors (422) and keeps nothing", async () => {
    const me = await ctx.newCompany('Bad files');
    const cases: [string | Buffer, { fileName?: string; field?: string }, string][] = [
      ['plate\nAB1\n', {}, 'The header row is missing the required column: vehicle_registration.'],
      ['', {}, 'The file is empty.'],
      ['vehicle_registration\nAB1\n', { fileName: 'plates.xlsx' }, 'The file must be a file of type: csv, txt.'],
      [
        Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x00, 0x00]),
        {},
        'The file must be a CSV text file; it looks like a binary file (save a spreadsheet as CSV first).',
      ],
      [Buffer.from('vehicle_registration\n\xff\xfe\n', 'latin1'), {}, 'The file must be UTF-8 text.'],
      ['vehicle_registration\n"AB1\n', {}, 'Row 2 has a quoted field that is never closed; the file is not valid CSV.'],
      ['vehicle_registration\nAB1\n', { field: 'other' }, 'The file field is required.'],
    ];
    for (const [content, opts, message] of cases) {
      const res = await upload(me, content, opts);
      expect(res.statusCode, message).toBe(422);
      expect(res.json()).toMatchObject({ message, code: 'validation_failed', errors: { file: [message] } });
    }
    const many = `vehicle_registration\n${'AB1\n'.repeat(100_001)}`;
    const res = await upload(me, many);
    expect(res.statusCode).toBe(422);
    expect(res.json().errors).toEqual({ file: ['The file must not have more than 100000 data rows.'] });
    const rows = await ctx.deps.db.query<{ n: number }>('SELECT count(*)::int AS n FROM lookup_batches WHERE company_id = $1', [me.id]);
    expect(rows[0]!.n).toBe(0);
  });

  it('answers 409 for the results of a batch that has not completed', async () => {
    const me = await ctx.newCompany('Early');
    const id = '00000000-0000-4000-8000-00000000abcd';
    await ctx.deps.db.query(
      `INSERT INTO lookup_batches (id, company_id, file_name, object_key, plates) VALUES ($1, $2, 'x.csv', 'none', 1)`,
      [id, me.id],
    );
    const res = await get(me, `/api/v1/lookups/batch/${id}/results.csv`);
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({ message: 'The batch has not completed yet; its results are not ready.', code: 'conflict' });
  });
});
