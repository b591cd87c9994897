import fs from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { apiError, createTestContext, type TestContext } from '../harness';
import { csv, fixture, HEADER, multipart, postImport, validRow } from '../import-helpers';

const MAX = 4096;
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ IMPORT_MAX_BYTES: String(MAX) });
});
afterAll(async () => ctx?.close());

/** Every file-level rejection: 422 with the message on `file`, no import recorded, no file kept. */
async function expectRejected(
  company: { id: string; auth: Record<string, string> },
  res: { statusCode: number; json(): unknown },
  ...messages: string[]
) {
  expect(res.statusCode).toBe(422);
  const body = res.json() as { message: string; errors: { file: string[] } };
  expect(body.errors.file).toEqual(messages);
  expect(body.message).toBe(messages[0]);
  const list = await ctx.app.inject({ method: 'GET', url: '/api/v1/imports', headers: company.auth });
  expect(list.json().data).toEqual([]);
  const dir = path.join(ctx.config.dataDir, 'imports', 'imports', company.id);
  expect(fs.existsSync(dir) ? fs.readdirSync(dir) : []).toEqual([]);
}

describe('POST /api/v1/claims/import rejects invalid files before any row', () => {
  it('rejects a request without a file part, with another field name, or not multipart', async () => {
    const company = await ctx.newCompany();
    const missing = await postImport(ctx.app, company.auth, csv([validRow()]), { field: 'upload' });
    await expectRejected(company, missing, 'The file field is required.');
    const json = await ctx.app.inject({ method: 'POST', url: '/api/v1/claims/import', headers: company.auth, payload: { file: 'x' } });
    await expectRejected(company, json, 'The file field is required.');
    const form = new FormData();
    form.append('note', 'no file here');
    const res = new Response(form);
    const fieldsOnly = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims/import',
      headers: { ...company.auth, 'content-type': res.headers.get('content-type')! },
      payload: Buffer.from(await res.arrayBuffer()),
    });
    await expectRejected(company, fieldsOnly, 'The file field is required.');
  });

  it('rejects other extensions than .csv and .txt', async () => {
    const company = await ctx.newCompany();
    for (const fileName of ['claims.xlsx', 'claims', 'claims.csv.exe']) {
      await expectRejected(
        company,
        await postImport(ctx.app, company.auth, csv([validRow()]), { fileName }),
        'The file must be a file of type: csv, txt.',
      );
    }
  });

  it('rejects an empty file, and one with nothing but blank lines', async () => {
    const company = await ctx.newCompany();
    await expectRejected(company, await postImport(ctx.app, company.auth, ''), 'The file is empty.');
    await expectRejected(company, await postImport(ctx.app, company.auth, '\r\n\n  \n'), 'The file is empty.');
    await expectRejected(company, await postImport(ctx.app, company.auth, Buffer.from([0xef, 0xbb, 0xbf])), 'The file is empty.');
  });

  it('rejects a binary file (an .xlsx renamed .csv) and text that is not UTF-8', async () => {
    const company = await ctx.newCompany();
    const zip = Buffer.concat([Buffer.from('PK\u0003\u0004\u0014\u0000\u0006\u0000', 'latin1'), Buffer.alloc(200, 7)]);
    await expectRejected(
      company,
      await postImport(ctx.app, company.auth, zip, { fileName: 'claims.csv' }),
      'The file must be a CSV text file; it looks like a binary file (save a spreadsheet as CSV first).',
    );
    const latin1 = Buffer.from(`${HEADER}\nJosé,Müller,1985-06-02,passport,X1,2026-01-01,AB1,,,,,\n`, 'latin1');
    await expectRejected(company, await postImport(ctx.app, company.auth, latin1), 'The file must be UTF-8 text.');
  });

  it('rejects a file over IMPORT_MAX_BYTES, and accepts one of exactly that size', async () => {
    const company = await ctx.newCompany();
    const base = csv([validRow()]);
    const padded = (size: number) => base + ' '.repeat(size - Buffer.byteLength(base));
    await expectRejected(
      company,
      await postImport(ctx.app, company.auth, padded(MAX + 1)),
      `The file must not be greater than 4 kilobytes (${MAX} bytes).`,
    );
    const atLimit = await postImport(ctx.app, company.auth, padded(MAX));
    expect(atLimit.statusCode, atLimit.body).toBe(200);
    expect(atLimit.json()).toMatchObject({ imported: 1, failed: 0 });
  });

  it('rejects a header with missing required or unknown columns and names them', async () => {
    const company = await ctx.newCompany();
    await expectRejected(
      company,
      await postImport(ctx.app, company.auth, fixture('import-bad-header.csv')),
      'The header row is missing the required columns: date_of_birth, id_number.',
      'The header row has unknown columns: Date_of_birth, policy_no,  amount.',
    );
  });

  it('rejects a duplicated column, and a blank first row instead of the header', async () => {
    const company = await ctx.newCompany();
    await expectRejected(
      company,
      await postImport(ctx.app, company.auth, `${HEADER},amount\n`),
      'The header row names a column more than once: amount.',
    );
    await expectRejected(
      company,
      await postImport(ctx.app, company.auth, `\n${csv([validRow()])}`),
      'The first row must be the header row; it is blank.',
    );
  });

  it('rejects a quoted field that is never closed (the file is not valid CSV)', async () => {
    const company = await ctx.newCompany();
    const text = csv([validRow()]) + 'Ona,"Petraitė,1985-06-02,passport,X1,2026-01-01,AB1,,,,,\n';
    await expectRejected(
      company,
      await postImport(ctx.app, company.auth, text),
      'Row 3 has a quoted field that is never closed; the file is not valid CSV.',
    );
  });

  it('answers 422 with a JSON body for a malformed multipart body', async () => {
    const company = await ctx.newCompany();
    const { contentType } = await multipart('x');
    const res = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims/import',
      headers: { ...company.auth, 'content-type': contentType },
      payload: Buffer.from('--garbage\r\n'),
    });
    expect(res.statusCode).toBe(422);
    expect(res.json().errors.file).toEqual(['The file field is required.']);
  });
});

describe('imports of another company', () => {
  it("answers 404 for another company's import, an unknown id, and an id that is not a UUID", async () => {
    const owner = await ctx.newCompany();
    const stranger = await ctx.newCompany();
    const r = await postImport(ctx.app, owner.auth, csv([validRow()]), { headers: { prefer: 'respond-async' } });
    const id = r.json().data.id as string;
    for (const [auth, url] of [
      [stranger.auth, `/api/v1/imports/${id}`],
      [owner.auth, '/api/v1/imports/00000000-0000-4000-8000-000000000000'],
      [owner.auth, '/api/v1/imports/not-a-uuid'],
    ] as const) {
      const res = await ctx.app.inject({ method: 'GET', url, headers: auth });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual(apiError('import_not_found', 'Import not found.'));
    }
    const list = await ctx.app.inject({ method: 'GET', url: '/api/v1/imports', headers: stranger.auth });
    expect(list.json().data).toEqual([]);
  });

  it('answers 401 without a valid token, before reading the upload', async () => {
    for (const headers of [{}, { authorization: 'Bearer csk_nope' }] as Record<string, string>[]) {
      const res = await postImport(ctx.app, headers, csv([validRow()]));
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual(apiError('unauthenticated', 'Unauthenticated.'));
      for (const url of ['/api/v1/imports', '/api/v1/imports/00000000-0000-4000-8000-000000000000']) {
        expect((await ctx.app.inject({ method: 'GET', url, headers })).statusCode).toBe(401);
      }
    }
  });
});

describe('OpenAPI', () => {
  it('documents the import routes with operation ids', async () => {
    const doc = (await ctx.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    expect(doc.paths['/api/v1/claims/import'].post.operationId).toBe('importClaims');
    expect(doc.paths['/api/v1/imports/{id}'].get.operationId).toBe('getImport');
    expect(doc.paths['/api/v1/imports'].get.operationId).toBe('listImports');
    expect(Object.keys(doc.paths['/api/v1/claims/import'].post.requestBody.content)).toEqual(['multipart/form-data']);
  });
});
