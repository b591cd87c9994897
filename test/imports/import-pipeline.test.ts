import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { ImportProgress } from '../../src/domain/imports/chunk-run';
import { claimBody, createTestContext, type TestContext } from '../harness';
import { csv, docNumber, futureDate, plate, postImport, validRow, waitForImport, type CsvRow, recordImport } from '../import-helpers';

/**
 * The import pipeline, chunk by chunk (chunks of 2 rows here, one written at a time, so that a
 * test can act between two chunks): the ledger, resumption, visibility, the state machine's
 * history, cancel. Imports are recorded without a job and run by calling the service. Chunks
 * written side by side (IMPORT_WRITERS): import-writers.test.ts.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ IMPORT_CHUNK_SIZE: '2', IMPORT_WRITERS: '1' });
});
afterAll(async () => ctx?.close());

type Company = Awaited<ReturnType<TestContext['newCompany']>>;

const getImport = async (company: Company, id: string) =>
  (await ctx.app.inject({ method: 'GET', url: `/api/v1/imports/${id}`, headers: company.auth })).json().data;
const searchCount = async (company: Company, plateRaw: string) =>
  (
    await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims/search-by-plate',
      headers: company.auth,
      payload: { vehicle_registration: plateRaw },
    })
  ).json().meta.total_claims as number;
const storedClaims = (id: string) => ctx.deps.repos.imports.countClaims(id);

function sixRows(): CsvRow[] {
  return [validRow(), validRow({ claim_date: futureDate() }), validRow(), validRow(), validRow({ amount: '-5' }), validRow()];
}

describe('chunk commits with a ledger', () => {
  it('keeps the claims invisible to every read until the import completes, while its persons exist at once', async () => {
    const company = await ctx.newCompany('Visibility');
    const rows = sixRows();
    const id = await recordImport(ctx, company, csv(rows));
    const seen: { search: number; list: number; personClaim: string | undefined }[] = [];
    const onProgress = async (p: ImportProgress) => {
      if (p.rows_done !== 2) return;
      const list = await ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: company.auth });
      // The person of row 2 was created by the committed first chunk: a submission finds them.
      const res = await ctx.app.inject({
        method: 'POST',
        url: '/api/v1/claims',
        headers: company.auth,
        payload: {
          client: {
            first_name: 'Ona',
            last_name: 'Petraitė',
            date_of_birth: rows[0]!.date_of_birth,
            id_documents: [{ type: 'passport', number: rows[0]!.id_number }],
          },
          claim_date: rows[0]!.claim_date,
          vehicle_registration: plate(),
        },
      });
      seen.push({
        search: await searchCount(company, rows[0]!.vehicle_registration!),
        list: list.json().data.length,
        personClaim: res.json().data?.client?.id,
      });
      expect(await storedClaims(id)).toBe(1);
    };
    const outcome = await ctx.deps.imports.process(id, { onProgress });
    expect(outcome).toMatchObject({ status: 'completed', imported: 4, failed: 2 });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.search).toBe(0);
    expect(seen[0]!.list).toBe(0);
    expect(seen[0]!.personClaim).toBeDefined();
    // Completed: all of them at once.
    expect(await searchCount(company, rows[0]!.vehicle_registration!)).toBe(1);
    const list = await ctx.app.inject({ method: 'GET', url: '/api/v1/claims?limit=100', headers: company.auth });
    expect(list.json().data).toHaveLength(5);
    expect(list.json().data.filter((c: { client: { id: string } }) => c.client.id === seen[0]!.personClaim)).toHaveLength(2);
  });

  it('resumes after the last committed chunk: every row once, the summary from the ledger, each change in the history', async () => {
    const company = await ctx.newCompany('Resume');
    const rows = sixRows();
    const id = await recordImport(ctx, company, csv(rows));
    // The first run dies after its second chunk (rows 2–5) committed.
    const dying = async (p: ImportProgress) => {
      if (p.rows_done === 4) throw new Error('the worker died');
    };
    await expect(ctx.deps.imports.process(id, { onProgress: dying })).rejects.toThrow('the worker died');
    expect(await storedClaims(id)).toBe(3);
    expect((await getImport(company, id)).status).toBe('processing');

    const outcome = await ctx.deps.imports.process(id);
    expect(outcome).toMatchObject({ status: 'completed', imported: 4, failed: 2, alreadyDone: false });
    expect(await storedClaims(id)).toBe(4);
    const data = await getImport(company, id);
    expect(data.summary).toEqual({
      message: 'Import finished: 4 imported, 2 failed.',
      imported: 4,
      failed: 2,
      errors: [
        { row: 3, messages: { claim_date: ['The claim date cannot be in the future.'] } },
        { row: 6, messages: { amount: [expect.any(String)] } },
      ],
    });
    expect(data.progress).toEqual({ rows_done: 6, rows_total: 6, rows_per_second: expect.any(Number), estimated_finish_at: null });
    expect(data.history.map((h: { status: string }) => h.status)).toEqual(['queued', 'processing', 'processing', 'completed']);
    expect(data.history.map((h: { attempt?: number }) => h.attempt)).toEqual([undefined, 1, 2, undefined]);
    const times = data.history.map((h: { at: string }) => Date.parse(h.at));
    expect(times.every((t: number) => !Number.isNaN(t))).toBe(true);
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    // A third run changes nothing.
    expect(await ctx.deps.imports.process(id)).toMatchObject({ status: 'completed', imported: 4, alreadyDone: true });
    expect(await storedClaims(id)).toBe(4);
  });

  it('resolves persons across chunks in file order: a person created by one chunk is found by the next ones', async () => {
    const company = await ctx.newCompany('Across chunks');
    const a = { id_number: docNumber(), date_of_birth: '1966-01-01' };
    const b = { id_number: docNumber(), date_of_birth: '1967-01-01' };
    // Chunks of 2: [A, B], [A, A with another date of birth], [B, A].
    const rows = [validRow(a), validRow(b), validRow(a), validRow({ ...a, date_of_birth: '1966-01-02' }), validRow(b), validRow(a)];
    const id = await recordImport(ctx, company, csv(rows));
    const outcome = await ctx.deps.imports.process(id);
    expect(outcome).toMatchObject({ status: 'completed', imported: 5, failed: 1 });
    expect((await getImport(company, id)).summary.errors).toEqual([
      { row: 5, messages: { date_of_birth: [expect.stringContaining('date of birth')] } },
    ]);
    const [counts] = await ctx.deps.db.query<{ claims: number; clients: number }>(
      'SELECT count(*)::int AS claims, count(DISTINCT client_id)::int AS clients FROM claims WHERE import_id = $1',
      [id],
    );
    expect(counts).toEqual({ claims: 5, clients: 2 });
  });

  it('finds a person that an API submission created while the chunk before was being written', async () => {
    const company = await ctx.newCompany('Created meanwhile');
    const late = { id_number: docNumber(), date_of_birth: '1972-03-04' };
    // Chunks of 2: the person of rows 4 and 5 is created through the API once the first chunk has
    // committed, when the second chunk's documents may already have been looked up.
    const rows = [validRow(), validRow(), validRow(late), validRow(late)];
    const id = await recordImport(ctx, company, csv(rows));
    let submitted = false;
    const outcome = await ctx.deps.imports.process(id, {
      onProgress: async () => {
        if (submitted) return;
        submitted = true;
        const res = await ctx.app.inject({
          method: 'POST',
          url: '/api/v1/claims',
          headers: company.auth,
          payload: claimBody({}, { date_of_birth: late.date_of_birth, id_documents: [{ type: 'passport', number: late.id_number }] }),
        });
        expect(res.statusCode, res.body).toBe(201);
      },
    });
    expect(outcome).toMatchObject({ status: 'completed', imported: 4, failed: 0 });
    const [counts] = await ctx.deps.db.query<{ claims: number; clients: number }>(
      'SELECT count(*)::int AS claims, count(DISTINCT client_id)::int AS clients FROM claims WHERE company_id = $1',
      [company.id],
    );
    // Rows 2 and 3 are two persons; the submission and rows 4 and 5 are one.
    expect(counts).toEqual({ claims: 5, clients: 3 });
  });

  it('removes the claims of an import that failed for good, and shows none of them', async () => {
    const company = await ctx.newCompany('Failed');
    const rows = sixRows();
    const id = await recordImport(ctx, company, csv(rows));
    await expect(
      ctx.deps.imports.process(id, {
        onProgress: async () => {
          throw new Error('boom');
        },
      }),
    ).rejects.toThrow('boom');
    expect(await storedClaims(id)).toBe(1);
    await ctx.deps.imports.markFailed(id, 'error', 'The import could not be completed; nothing was imported. Try again later.');
    expect(await storedClaims(id)).toBe(0);
    const data = await getImport(company, id);
    expect(data).toMatchObject({ status: 'failed', summary: null });
    expect(data.history.map((h: { status: string }) => h.status)).toEqual(['queued', 'processing', 'failed']);
    expect(await searchCount(company, rows[0]!.vehicle_registration!)).toBe(0);
  });

  it('answers the API with history through a whole import', async () => {
    const company = await ctx.newCompany('History');
    const res = await postImport(ctx.app, company.auth, csv([validRow(), validRow()]), { headers: { prefer: 'respond-async' } });
    expect(res.statusCode).toBe(202);
    expect(res.json().data.history[0]).toEqual({
      status: 'queued',
      at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?[+-]\d\d:\d\d$/u),
    });
    const done = await waitForImport(ctx.app, company.auth, res.json().data.id);
    expect(done.history.map((h: { status: string }) => h.status)).toEqual(['queued', 'processing', 'completed']);
  });
});

describe('POST /api/v1/imports/{id}/cancel', () => {
  const cancel = (company: Company, id: string) =>
    ctx.app.inject({ method: 'POST', url: `/api/v1/imports/${id}/cancel`, headers: company.auth });

  it('cancels a queued import at once (200), which then never starts; a second cancel is 200 again', async () => {
    const company = await ctx.newCompany('Cancel queued');
    const id = await recordImport(ctx, company, csv([validRow()]));
    const res = await cancel(company, id);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toMatchObject({ status: 'cancelled', message: 'The import was cancelled; nothing was imported.' });
    expect(res.json().data.history.map((h: { status: string }) => h.status)).toEqual(['queued', 'cancelled']);
    expect(await ctx.deps.imports.process(id)).toMatchObject({ status: 'cancelled', alreadyDone: true });
    expect(await storedClaims(id)).toBe(0);
    expect((await cancel(company, id)).statusCode).toBe(200);
  });

  it('stops a processing import after the current chunk (202), leaving no claim', async () => {
    const company = await ctx.newCompany('Cancel processing');
    const rows = sixRows();
    const id = await recordImport(ctx, company, csv(rows));
    let answered: number | undefined;
    const outcome = await ctx.deps.imports.process(id, {
      onProgress: async (p) => {
        if (p.rows_done === 2) answered = (await cancel(company, id)).statusCode;
      },
    });
    expect(answered).toBe(202);
    expect(outcome.status).toBe('cancelled');
    expect(await storedClaims(id)).toBe(0);
    const data = await getImport(company, id);
    expect(data.history.map((h: { status: string }) => h.status)).toEqual(['queued', 'processing', 'cancelled']);
    expect(await searchCount(company, rows[0]!.vehicle_registration!)).toBe(0);
  });

  it("answers 409 for a finished import and 404 for another company's", async () => {
    const company = await ctx.newCompany('Cancel done');
    const res = await postImport(ctx.app, company.auth, csv([validRow({ id_number: docNumber() })]));
    expect(res.statusCode).toBe(200);
    const [run] = (await ctx.app.inject({ method: 'GET', url: '/api/v1/imports', headers: company.auth })).json().data;
    const done = await cancel(company, run.id);
    expect(done.statusCode).toBe(409);
    expect(done.json()).toMatchObject({ message: 'The import has already finished.', code: 'import_finished' });
    const other = await ctx.newCompany('Other');
    expect((await cancel(other, run.id)).statusCode).toBe(404);
  });
});

describe('GET /api/v1/imports/{id}/errors.csv', () => {
  it('gives the rejected rows back with the original columns in order (id_number empty), row and errors; the fixed file imports them', async () => {
    const company = await ctx.newCompany('Errors file');
    const columns = ['vehicle_registration', 'claim_date', 'first_name', 'last_name', 'date_of_birth', 'id_type', 'id_number', 'amount'];
    const bad1 = validRow({ claim_date: futureDate(), first_name: 'Ona, "the first"' });
    const bad2 = validRow({ amount: '-5', first_name: '' });
    const rows = [validRow(), bad1, validRow(), bad2];
    const res = await postImport(ctx.app, company.auth, csv(rows, { columns, delimiter: ';' }));
    expect(res.json()).toMatchObject({ imported: 2, failed: 2 });
    const [run] = (await ctx.app.inject({ method: 'GET', url: '/api/v1/imports', headers: company.auth })).json().data;

    const file = await ctx.app.inject({ method: 'GET', url: `/api/v1/imports/${run.id}/errors.csv`, headers: company.auth });
    expect(file.statusCode).toBe(200);
    expect(file.headers['content-type']).toMatch(/^text\/csv/u);
    const { parse } = await import('csv-parse/sync');
    const records = parse(file.body, { bom: true });
    expect(records[0]).toEqual([...columns, 'row', 'errors']);
    expect(records.slice(1)).toEqual([
      [
        bad1.vehicle_registration,
        bad1.claim_date,
        bad1.first_name,
        bad1.last_name,
        bad1.date_of_birth,
        bad1.id_type,
        '',
        bad1.amount,
        '3',
        'claim_date: The claim date cannot be in the future.',
      ],
      [
        bad2.vehicle_registration,
        bad2.claim_date,
        '',
        bad2.last_name,
        bad2.date_of_birth,
        bad2.id_type,
        '',
        '-5',
        '5',
        expect.stringMatching(/^first_name: .+; amount: .+$/u),
      ],
    ]);
    expect(file.body).not.toContain(bad1.id_number);

    // The person fixes the rows, puts the document numbers back, deletes the last two columns, and uploads again.
    const fixed = records.slice(1).map((r) => r.slice(0, columns.length));
    fixed[0]![1] = rows[0]!.claim_date!;
    fixed[0]![6] = bad1.id_number!;
    fixed[1]![2] = 'Jonas';
    fixed[1]![6] = bad2.id_number!;
    fixed[1]![7] = '5';
    const again = csv(
      fixed.map((r) => Object.fromEntries(columns.map((c, i) => [c, r[i]]))),
      { columns },
    );
    const res2 = await postImport(ctx.app, company.auth, again);
    expect(res2.json()).toMatchObject({ imported: 2, failed: 0 });

    const other = await ctx.newCompany('Other');
    expect((await ctx.app.inject({ method: 'GET', url: `/api/v1/imports/${run.id}/errors.csv`, headers: other.auth })).statusCode).toBe(
      404,
    );
  });
});

describe('POST /api/v1/claims/import?dry_run=true', () => {
  it('validates every row as a real import would, identity rules against stored persons included, and writes nothing', async () => {
    const company = await ctx.newCompany('Dry run');
    // A person on record, whose document shows up in the file with another date of birth.
    const known = validRow();
    expect((await postImport(ctx.app, company.auth, csv([known]))).json()).toMatchObject({ imported: 1 });
    const rows = [
      validRow(),
      validRow({ id_number: known.id_number, date_of_birth: '1970-01-01' }),
      validRow({ claim_date: futureDate() }),
      validRow(),
    ];
    // The same person twice in the file: found in file order, as in a real import.
    rows[3] = { ...rows[0]!, vehicle_registration: plate() };
    const headers = { 'idempotency-key': `dry-${docNumber()}` };
    const before = (await ctx.app.inject({ method: 'GET', url: '/api/v1/imports', headers: company.auth })).json().data.length;

    const form = await multipartHeaders(csv(rows));
    const body = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims/import?dry_run=true',
      headers: { ...company.auth, ...headers, ...form.headers },
      payload: form.payload,
    });
    expect(body.statusCode, body.body).toBe(200);
    expect(body.json()).toMatchObject({ dry_run: true, message: 'Import finished: 2 imported, 2 failed.', imported: 2, failed: 2 });
    expect(body.json().errors.map((e: { row: number }) => e.row)).toEqual([3, 4]);
    expect(Object.keys(body.json().errors[0].messages)).toEqual(['date_of_birth']);

    // Nothing written: no claim, no person, no import, no idempotency record (the same key imports for real afterwards).
    expect(await searchCount(company, rows[0]!.vehicle_registration!)).toBe(0);
    expect((await ctx.app.inject({ method: 'GET', url: '/api/v1/imports', headers: company.auth })).json().data.length).toBe(before);
    const persons = await ctx.deps.db.query('SELECT 1 FROM clients WHERE first_name = $1 AND date_of_birth = $2', [
      rows[0]!.first_name,
      '1970-01-01',
    ]);
    expect(persons).toEqual([]);
    const real = await postImport(ctx.app, company.auth, csv(rows), { headers });
    expect(real.json()).toMatchObject({ imported: 2, failed: 2 });
    expect(real.headers['idempotent-replayed']).toBeUndefined();
  });

  it('answers the same 422s as a real import for a bad file', async () => {
    const company = await ctx.newCompany('Dry run bad');
    const { payload, headers } = await multipartHeaders('first_name,surname\nA,B\n');
    const res = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims/import?dry_run=true',
      headers: { ...company.auth, ...headers },
      payload,
    });
    expect(res.statusCode).toBe(422);
    expect(res.json().errors.file[0]).toMatch(/^The header row is missing the required columns/u);
  });
});

async function multipartHeaders(content: string) {
  const { multipart } = await import('../import-helpers');
  const body = await multipart(content);
  return { payload: body.payload, headers: { 'content-type': body.contentType } };
}
