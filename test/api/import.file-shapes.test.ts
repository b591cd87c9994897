import type { AddressInfo } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { fileMessages, MAX_FIELD_COUNT_ERRORS, MAX_HEADER_BYTES, MAX_RECORD_CHARS } from '../../src/domain/imports/csv-file';
import { apiError, createTestContext, type Company, type TestContext } from '../harness';
import { csv, HEADER, postImport, sendUpload, validRow } from '../import-helpers';

/**
 * Files shaped to cost more than their size: blank lines, rows of one field, one huge line or
 * quoted field, a header of many columns. Each is answered with the contract's status (422 for a
 * file over the size limit or not valid as a whole, else the import's summary), and the size limit
 * is applied to the bytes as they arrive, before they are parsed.
 */
const MAX = 2 * 1024 * 1024;
let ctx: TestContext;
let company: Company;

beforeAll(async () => {
  ctx = await createTestContext({ IMPORT_MAX_BYTES: String(MAX) });
  company = await ctx.newCompany();
});
afterAll(async () => ctx?.close());

const fileError = (message: string) => apiError('validation_failed', message, { file: [message] });

describe('files shaped to be expensive', () => {
  it('refuses a file of blank lines one byte over the limit with the size 422', async () => {
    const head = `${csv([validRow()])}`;
    const res = await postImport(ctx.app, company.auth, head + '\n'.repeat(MAX + 1 - head.length));
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual(fileError(fileMessages.tooLarge(MAX)));
  });

  it('imports a file of blank lines just under the limit, numbering rows past them as a spreadsheet does', async () => {
    const blank = 1_500_000;
    const [a, b] = [validRow(), validRow({ claim_date: 'soon' })];
    const text = `${HEADER}\n${csv([a]).split('\n')[1]}\n${'\n'.repeat(blank)}${csv([b]).split('\n')[1]}\n`;
    const res = await postImport(ctx.app, company.auth, text);
    expect(res.statusCode, res.body).toBe(200);
    // Header row 1, first row 2, then `blank` blank rows, then the second row.
    expect(res.json()).toMatchObject({
      imported: 1,
      failed: 1,
      errors: [{ row: 3 + blank, messages: { claim_date: [expect.any(String)] } }],
    });
  });

  it(`treats a file with more than ${MAX_FIELD_COUNT_ERRORS} rows of another field count as an invalid file (422), naming a row`, async () => {
    const rows = Array.from({ length: 200_000 }, () => 'x').join('\n');
    const res = await postImport(ctx.app, company.auth, `${HEADER}\n${rows}\n`);
    expect(res.statusCode).toBe(422);
    const message = fileMessages.fieldCounts(MAX_FIELD_COUNT_ERRORS + 2, 1, HEADER.split(',').length);
    expect(res.json()).toEqual(fileError(message));
    expect(message).toContain('check the file');
  });

  it(`still reports up to ${MAX_FIELD_COUNT_ERRORS} rows of another field count as row errors beside the valid rows`, async () => {
    const bad = Array.from({ length: MAX_FIELD_COUNT_ERRORS }, () => 'x');
    const res = await postImport(ctx.app, company.auth, `${csv([validRow()])}${bad.join('\n')}\n`);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ imported: 1, failed: MAX_FIELD_COUNT_ERRORS });
    expect(body.errors[0]).toEqual({ row: 3, messages: { row: ['The row has 1 field; the header has 12.'] } });
  });

  it('refuses a single line with no end as a header that does not end in time (422)', async () => {
    const res = await postImport(ctx.app, company.auth, 'a'.repeat(MAX - 10));
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual(fileError(fileMessages.headerTooLong));
  });

  it('refuses a header of 100,000 columns (422)', async () => {
    const header = Array.from({ length: 100_000 }, (_, i) => `c${i}`).join(',');
    const res = await postImport(ctx.app, company.auth, `${header}\n`);
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual(fileError(fileMessages.headerTooLong));
    expect(header.length).toBeGreaterThan(MAX_HEADER_BYTES);
  });

  it('names at most 20 unknown columns of a wide header that fits, with their number (422)', async () => {
    const header = `${HEADER},${Array.from({ length: 5000 }, (_, i) => `c${i}`).join(',')}`;
    const res = await postImport(ctx.app, company.auth, `${header}\n`);
    expect(res.statusCode).toBe(422);
    const names = Array.from({ length: 20 }, (_, i) => `c${i}`).join(', ');
    expect(res.json().errors.file).toEqual([`The header row has unknown columns: ${names}, … (5000 in all).`]);
  });

  it('refuses a data row longer than the record limit, as one line or as one quoted field (422)', async () => {
    const long = 'y'.repeat(MAX_RECORD_CHARS * 1.5);
    for (const row of [long, `"${long}"`]) {
      const res = await postImport(ctx.app, company.auth, `${HEADER}\n${row}\n`);
      expect(res.statusCode).toBe(422);
      expect(res.json()).toEqual(fileError(fileMessages.recordTooLarge(2)));
    }
  });
});

describe('the size limit on the bytes as they arrive', () => {
  let base: string;
  beforeAll(async () => {
    await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`;
  });

  it('answers 422 once the byte past the limit is read, while the rest of the upload is still being sent', async () => {
    // One byte over the limit, and the request is never ended: only an answer given as that byte
    // arrives can settle this promise.
    const file = Buffer.concat([Buffer.from(`${HEADER}\n`), Buffer.alloc(MAX + 1 - HEADER.length - 1, 0x0a)]);
    const res = await sendUpload(base, '/api/v1/claims/import', company.auth, {}, file, false);
    expect(res.status).toBe(422);
    expect(JSON.parse(res.body)).toEqual(fileError(fileMessages.tooLarge(MAX)));
  });
});
