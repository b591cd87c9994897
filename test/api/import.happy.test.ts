import fs from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { claimBody, createTestContext, type TestContext } from '../harness';
import {
  csv,
  docNumber,
  fixture,
  FIXTURES,
  futureDate,
  HEADER,
  plate,
  postImport,
  recentDate,
  validRow,
  waitForImport,
} from '../import-helpers';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx?.close());

const search = async (auth: Record<string, string>, vehicle_registration: string) =>
  (
    await ctx.app.inject({ method: 'POST', url: '/api/v1/claims/search-by-plate', headers: auth, payload: { vehicle_registration } })
  ).json();

describe('POST /api/v1/claims/import', () => {
  it('imports valid rows, reports invalid ones by spreadsheet row number in row order, and answers 200', async () => {
    const company = await ctx.newCompany('Importer');
    const good = validRow({ vehicle_registration: 'ab-77.1 q', amount: '99.5', is_at_fault: 'TRUE', status: '' });
    const rows = [good, validRow({ claim_date: futureDate() }), validRow(), validRow({ first_name: '', amount: '-1' })];
    const res = await postImport(ctx.app, company.auth, csv(rows));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      id: expect.any(String),
      message: 'Import finished: 2 imported, 2 failed.',
      imported: 2,
      failed: 2,
      errors: [
        { row: 3, messages: { claim_date: ['The claim date cannot be in the future.'] } },
        { row: 5, messages: { first_name: ['The first name field is required.'], amount: ['The amount must be at least 0.'] } },
      ],
    });
    // Messages come in column order.
    expect(Object.keys(res.json().errors[1].messages)).toEqual(['first_name', 'amount']);
    const found = await search(company.auth, 'AB771Q');
    expect(found.data).toHaveLength(1);
    expect(found.data[0]).toMatchObject({
      source: 'bulk_import',
      status: 'filed',
      amount: '99.50',
      currency: 'EUR',
      is_at_fault: true,
      claim_type: 'accident',
      company_name: company.name,
      client: { first_name: 'Ona', date_of_birth: '1985-06-02', id_documents: [{ type: 'passport' }] },
    });
    expect(res.body).not.toContain(good.id_number!);
  });

  it('names the import it was: its id and a Location from which the failed rows are fetched', async () => {
    const company = await ctx.newCompany('Named import');
    const res = await postImport(ctx.app, company.auth, csv([validRow(), validRow({ claim_date: futureDate() })]));
    expect(res.statusCode, res.body).toBe(200);
    const { id } = res.json();
    expect(Object.keys(res.json()).sort()).toEqual(['errors', 'failed', 'id', 'imported', 'message']);
    expect(res.headers.location).toBe(`/api/v1/imports/${id}`);
    const run = await ctx.app.inject({ method: 'GET', url: res.headers.location, headers: company.auth });
    expect(run.json().data).toMatchObject({ id, status: 'completed', imported: 1, failed: 1 });
    const failedRows = await ctx.app.inject({ method: 'GET', url: `${res.headers.location}/errors.csv`, headers: company.auth });
    expect(failedRows.statusCode).toBe(200);
    expect(failedRows.body).toContain('The claim date cannot be in the future.');
    // A dry run keeps nothing: no id, no Location.
    const dry = await postImport(ctx.app, company.auth, csv([validRow()]), { url: '/api/v1/claims/import?dry_run=true' });
    expect(dry.statusCode, dry.body).toBe(200);
    expect(dry.json()).toEqual({ message: 'Import finished: 1 imported, 0 failed.', imported: 1, failed: 0, errors: [], dry_run: true });
    expect(dry.headers.location).toBeUndefined();
  });

  it('handles semicolons, a BOM, CRLF, quoted fields, blank rows, free column order and file-order identities', async () => {
    const company = await ctx.newCompany('Mixed');
    const tag = `M${docNumber('')}`;
    const text = fixture('import-mixed.csv')
      .toString('utf8')
      .replace('{{D30}}', recentDate(30))
      .replace('{{D40}}', recentDate(40))
      .replace('{{D50}}', recentDate(50))
      .replace('{{D60}}', recentDate(60))
      .replace('{{D70}}', recentDate(70))
      .replace('{{FUTURE}}', futureDate())
      .replace(/mix000/giu, (m) => (m === 'mix000' ? tag.toLowerCase() : tag));
    const res = await postImport(ctx.app, company.auth, text, { fileName: 'export.TXT' });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ message: 'Import finished: 2 imported, 4 failed.', imported: 2, failed: 4 });
    // Row 4 spans two lines of the file (a quoted line break) but is one row of a spreadsheet; the
    // line break itself is not allowed in a name. Row 6 is blank (skipped, still counted).
    expect(body.errors.map((e: { row: number }) => e.row)).toEqual([4, 5, 8, 9]);
    expect(Object.keys(body.errors[0].messages)).toEqual(['last_name']);
    expect(body.errors.slice(1)).toEqual([
      { row: 5, messages: { row: ['The row has 6 fields; the header has 12.'] } },
      {
        row: 8,
        messages: {
          date_of_birth: [
            'The date of birth does not match the client on record for this identity document (data quality error: check the date of birth and the document).',
          ],
        },
      },
      {
        row: 9,
        messages: {
          claim_date: ['The claim date cannot be in the future.'],
          claim_type: ['The claim type field must be one of: accident, theft, other.'],
          amount: ['The amount must be at least 0.'],
          currency: ['The currency must be EUR; no other currency is supported.'],
          is_at_fault: ['The is at fault field must be true or false.'],
        },
      },
    ]);
    const first = {
      data: (await search(company.auth, 'AB123C')).data.filter((c: { company_name: string }) => c.company_name === company.name),
    };
    // Row 2 and row 7 are the same person (the "LT-" prefix and the case do not matter).
    expect(first.data).toHaveLength(2);
    expect(new Set(first.data.map((c: { client: { id: string } }) => c.client.id)).size).toBe(1);
    expect(first.data.map((c: { status: string }) => c.status).sort()).toEqual(['filed', 'under_investigation']);
    expect(first.data.find((c: { status: string }) => c.status === 'filed').client.last_name).toBe('Petraitė; née Kaz');
    // The quoted first name with doubled quotes was read as one field (the row failed only on the line break).
    expect((await search(company.auth, 'XY999')).data).toHaveLength(0);
  });

  it('accepts tab-delimited files with LF line ends', async () => {
    const company = await ctx.newCompany('Tabs');
    const row = validRow();
    const res = await postImport(ctx.app, company.auth, csv([row], { delimiter: '\t' }));
    expect(res.json()).toMatchObject({ imported: 1, failed: 0, errors: [] });
  });

  it('treats a header without data rows as an empty import (200, nothing imported)', async () => {
    const company = await ctx.newCompany('Empty');
    const res = await postImport(ctx.app, company.auth, `${HEADER}\r\n\r\n`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      id: expect.any(String),
      message: 'Import finished: 0 imported, 0 failed.',
      imported: 0,
      failed: 0,
      errors: [],
    });
  });

  it('answers 200 also when every row failed', async () => {
    const company = await ctx.newCompany('AllBad');
    const res = await postImport(
      ctx.app,
      company.auth,
      csv([validRow({ id_type: 'driving_licence' }), validRow({ date_of_birth: '1985-02-30' })]),
    );
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      id: expect.any(String),
      message: 'Import finished: 0 imported, 2 failed.',
      imported: 0,
      failed: 2,
      errors: [
        { row: 2, messages: { id_type: ['The document type field must be one of: passport, national_id, alien_registration.'] } },
        { row: 3, messages: { date_of_birth: ['The date of birth is not a date in the calendar: February 1985 has 28 days.'] } },
      ],
    });
  });

  it('validates rows with the same rules and messages as POST /claims', async () => {
    const company = await ctx.newCompany('Same');
    const bad = { claim_date: recentDate(365 * 4), vehicle_registration: '!!!', amount: '1.234' };
    const api = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims',
      headers: company.auth,
      payload: claimBody({ ...bad }),
    });
    expect(api.statusCode).toBe(422);
    const imported = await postImport(ctx.app, company.auth, csv([validRow(bad)]));
    expect(imported.json().errors[0].messages).toEqual(api.json().errors);
  });

  it('accepts is_at_fault as true, false, 1 or 0 in any case, and empty optional cells as not given', async () => {
    const company = await ctx.newCompany('Bools');
    const values = ['True', 'FALSE', '1', '0', ''];
    const rows = values.map((v) => validRow({ is_at_fault: v, amount: '', currency: '', claim_type: '', status: '' }));
    const res = await postImport(ctx.app, company.auth, csv(rows));
    expect(res.json()).toMatchObject({ imported: 5, failed: 0 });
    const got = await Promise.all(rows.map(async (r) => (await search(company.auth, r.vehicle_registration!)).data[0]));
    expect(got.map((c) => c.is_at_fault)).toEqual([true, false, true, false, null]);
    expect(got.every((c) => c.amount === null && c.claim_type === null && c.currency === 'EUR' && c.status === 'filed')).toBe(true);
  });

  it('resolves a person created earlier in the same file and adds a second document type to them', async () => {
    const company = await ctx.newCompany('People');
    const passport = docNumber();
    const row2 = validRow({ id_number: passport });
    const rows = [row2, ...Array.from({ length: 6 }, () => validRow()), validRow({ id_number: passport, first_name: 'Other' })];
    const res = await postImport(ctx.app, company.auth, csv(rows));
    expect(res.json()).toMatchObject({ imported: 8, failed: 0 });
    const [a] = (await search(company.auth, row2.vehicle_registration!)).data;
    const [b] = (await search(company.auth, rows[7]!.vehicle_registration!)).data;
    expect(b.client.id).toBe(a.client.id);
    expect(b.client.first_name).toBe('Ona'); // names on record are not overwritten
  });

  // (An import row carries one document, so it can never match two different clients.)
  it('finds persons created through the API, and reports a known document with another date of birth on date_of_birth', async () => {
    const company = await ctx.newCompany('Mixed sources');
    const p1 = docNumber();
    for (const [type, number] of [['passport', p1]] as const) {
      const r = await ctx.app.inject({
        method: 'POST',
        url: '/api/v1/claims',
        headers: company.auth,
        payload: claimBody({}, { id_documents: [{ type, number }] }),
      });
      expect(r.statusCode).toBe(201);
    }
    const res = await postImport(
      ctx.app,
      company.auth,
      csv([validRow({ id_number: p1 }), validRow({ id_number: p1, date_of_birth: '1999-09-09' })]),
    );
    expect(res.json()).toMatchObject({ imported: 1, failed: 1 });
    expect(Object.keys(res.json().errors[0].messages)).toEqual(['date_of_birth']);
  });
});

describe('the sample file in docs/', () => {
  // Its claim dates are fixed (2026); the service's clock is set to a day that suits them, so the
  // file gives the same result in any year.
  let sampleCtx: TestContext;
  beforeAll(async () => {
    sampleCtx = await createTestContext({}, { today: () => '2026-11-20' });
  });
  afterAll(async () => sampleCtx?.close());

  it('imports 4 rows and reports the 2 deliberate errors', async () => {
    const company = await sampleCtx.newCompany('Sample');
    const sample = fs.readFileSync(path.join(FIXTURES, '..', '..', 'docs', 'sample-import.csv'));
    const res = await postImport(sampleCtx.app, company.auth, sample, { fileName: 'sample-import.csv' });
    expect(res.json()).toEqual({
      id: expect.any(String),
      message: 'Import finished: 4 imported, 2 failed.',
      imported: 4,
      failed: 2,
      errors: [
        { row: 6, messages: { claim_date: ['The claim date cannot be in the future.'] } },
        {
          row: 7,
          messages: {
            date_of_birth: ['The date of birth is not a date in the calendar: February 1988 has 29 days.'],
            id_type: ['The document type field must be one of: passport, national_id, alien_registration.'],
            amount: ['The amount must be at least 0.'],
            is_at_fault: ['The is at fault field must be true or false.'],
          },
        },
      ],
    });
    // Rows 2 and 4 are the same person (the LT- prefix is stripped before matching).
    const found = await sampleCtx.app.inject({
      method: 'POST',
      url: '/api/v1/claims/search-by-plate',
      headers: company.auth,
      payload: { vehicle_registration: 'AB123C' },
    });
    const ona = found.json().data.filter((c: { company_name: string }) => c.company_name === company.name);
    expect(ona).toHaveLength(2);
    expect(ona[0].client.id).toBe(ona[1].client.id);
  });
});

describe('asynchronous imports', () => {
  it('answers 202 with a Location for Prefer: respond-async, and the import reports status, progress and the same summary', async () => {
    const company = await ctx.newCompany('Async');
    const rows = [validRow(), validRow({ claim_date: futureDate() })];
    const res = await postImport(ctx.app, company.auth, csv(rows), { headers: { prefer: 'respond-async' }, fileName: 'june.csv' });
    expect(res.statusCode, res.body).toBe(202);
    const { data } = res.json();
    expect(res.headers.location).toBe(`/api/v1/imports/${data.id}`);
    expect(data).toMatchObject({ file_name: 'june.csv', progress: { rows_total: 2 } });
    expect(['queued', 'processing', 'completed']).toContain(data.status);
    const done = await waitForImport(ctx.app, company.auth, data.id);
    expect(done).toMatchObject({
      status: 'completed',
      imported: 1,
      failed: 1,
      progress: { rows_done: 2, rows_total: 2 },
      summary: {
        message: 'Import finished: 1 imported, 1 failed.',
        imported: 1,
        failed: 1,
        errors: [{ row: 3, messages: { claim_date: ['The claim date cannot be in the future.'] } }],
      },
    });
    expect(done.finished_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/);
  });

  it("lists the caller's company's imports only, newest first, with a cursor", async () => {
    const company = await ctx.newCompany('Lister');
    const other = await ctx.newCompany('Other');
    await postImport(ctx.app, other.auth, csv([validRow()]));
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await postImport(ctx.app, company.auth, csv([validRow()]), { headers: { prefer: 'respond-async' }, fileName: `f${i}.csv` });
      ids.push(r.json().data.id);
      await waitForImport(ctx.app, company.auth, r.json().data.id);
    }
    const page1 = (await ctx.app.inject({ method: 'GET', url: '/api/v1/imports?limit=2', headers: company.auth })).json();
    expect(page1.data.map((d: { id: string }) => d.id)).toEqual([ids[2], ids[1]]);
    expect(page1.data[0]).toMatchObject({ status: 'completed', file_name: 'f2.csv', imported: 1, failed: 0 });
    expect(page1.data[0]).not.toHaveProperty('summary');
    const page2 = (
      await ctx.app.inject({ method: 'GET', url: `/api/v1/imports?limit=2&cursor=${page1.meta.next_cursor}`, headers: company.auth })
    ).json();
    expect(page2.data.map((d: { id: string }) => d.id)).toEqual([ids[0]]);
    expect(page2.meta.next_cursor).toBeNull();
  });

  it('keeps only a sanitised file name for display', async () => {
    const company = await ctx.newCompany('Names');
    const r = await postImport(ctx.app, company.auth, csv([validRow()]), {
      fileName: '../../etc/pass|wd<x>.csv',
      headers: { prefer: 'respond-async' },
    });
    expect(r.json().data.file_name).toBe('pass_wd_x_.csv');
  });

  it('creates the claims with the plate normalised so that the plate search finds them', async () => {
    const company = await ctx.newCompany('Plates');
    const p = plate();
    await postImport(ctx.app, company.auth, csv([validRow({ vehicle_registration: `${p.slice(0, 2).toLowerCase()} ${p.slice(2)}` })]));
    expect((await search(company.auth, p)).meta.total_claims).toBe(1);
  });
});
