import { gzipSync, createGzip } from 'node:zlib';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { fileMessages } from '../../src/domain/imports/csv-file';
import { GZIP_MAX_RATIO } from '../../src/domain/uploads/upload';
import { createTestContext, type TestContext } from '../harness';
import { csv, plate, postImport, postLookupBatch, validRow } from '../import-helpers';

/**
 * Compressed uploads (issue 56): a gzip file part is recognised by its magic bytes whatever its
 * name, decompressed as it arrives, and stored as the CSV it holds; IMPORT_MAX_BYTES counts the
 * decompressed bytes, and a file that expands more than GZIP_MAX_RATIO times past its first MB is
 * refused as a decompression bomb before the limit is reached.
 */
const MAX = 2 * 1024 * 1024;
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ IMPORT_MAX_BYTES: String(MAX) });
});
afterAll(async () => ctx?.close());

/** `bytes` of the gzip stream of a header line and then newlines only (a bomb), streamed. */
async function bomb(uncompressed: number): Promise<Buffer> {
  const head = 'first_name,last_name,date_of_birth,id_type,id_number,claim_date,vehicle_registration\n';
  const block = Buffer.alloc(1024 * 1024, '\n');
  async function* body() {
    yield Buffer.from(head);
    for (let sent = 0; sent < uncompressed; sent += block.length) yield block;
  }
  return buffer(Readable.from(body()).pipe(createGzip({ level: 9 })));
}

describe('gzip uploads', () => {
  it('imports a gzip file part, named .csv.gz or .csv alike (its magic bytes tell), as the CSV it holds', async () => {
    const company = await ctx.newCompany('Gzip');
    const rows = [validRow(), validRow(), validRow({ claim_date: '2999-01-01' })];
    for (const fileName of ['claims.csv.gz', 'claims.csv']) {
      const res = await postImport(
        ctx.app,
        company.auth,
        gzipSync(csv(rows.map((r) => ({ ...r, id_number: `${r.id_number}${fileName.length}` })))),
        {
          fileName,
        },
      );
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ imported: 2, failed: 1 });
    }
  });

  it('counts the decompressed bytes against IMPORT_MAX_BYTES', async () => {
    const company = await ctx.newCompany('Gzip large');
    // Rows compress well: far under the limit compressed, over it decompressed.
    const text = csv(Array.from({ length: Math.ceil(MAX / 90) }, () => validRow()));
    expect(Buffer.byteLength(text)).toBeGreaterThan(MAX);
    const gz = gzipSync(text);
    expect(gz.length).toBeLessThan(MAX / 4);
    const res = await postImport(ctx.app, company.auth, gz, { fileName: 'claims.csv.gz' });
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().errors).toEqual({ file: [fileMessages.tooLarge(MAX)] });
  });

  it('refuses a decompression bomb with 422 naming the file, before the size limit is reached', async () => {
    const company = await ctx.newCompany('Gzip bomb');
    // About 16 KB that expand to 16 MB, twice the limit: the ratio refuses it first.
    const gz = await bomb(2 * MAX);
    expect(gz.length * GZIP_MAX_RATIO).toBeLessThan(MAX);
    const res = await postImport(ctx.app, company.auth, gz, { fileName: 'bomb.csv.gz' });
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().errors).toEqual({ file: [fileMessages.gzipBomb('bomb.csv.gz', GZIP_MAX_RATIO)] });
    expect(await ctx.deps.db.query('SELECT 1 FROM imports WHERE company_id = $1', [company.id])).toHaveLength(0);
  });

  it('refuses a damaged gzip file with 422 naming the file', async () => {
    const company = await ctx.newCompany('Gzip damaged');
    const gz = gzipSync(csv([validRow(), validRow()]));
    const res = await postImport(ctx.app, company.auth, gz.subarray(0, gz.length - 12), { fileName: 'cut.csv.gz' });
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().errors).toEqual({ file: [fileMessages.notGzip('cut.csv.gz')] });
  });

  it('takes a gzip batch plate file', async () => {
    const company = await ctx.newCompany('Gzip plates');
    const res = await postLookupBatch(ctx.app, company.auth, gzipSync(`vehicle_registration\n${plate()}\n${plate()}\n`), {
      fileName: 'plates.csv.gz',
    });
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json().data).toMatchObject({ plates: 2 });
  });
});
