import { gzipSync, createGzip } from 'node:zlib';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { uploadPartMessages } from '../../src/api/routes/upload-part';
import { fileMessages } from '../../src/domain/imports/csv-file';
import { GZIP_MAX_RATIO } from '../../src/domain/uploads/upload';
import { createTestContext, type TestContext } from '../harness';
import { csv, multipart, plate, postImport, postLookupBatch, validRow } from '../import-helpers';

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

const HEADER_LINE = 'first_name,last_name,date_of_birth,id_type,id_number,claim_date,vehicle_registration';

/** `bytes` of the gzip stream of a header line and then newlines only (a bomb), streamed. */
async function bomb(uncompressed: number): Promise<Buffer> {
  const head = `${HEADER_LINE}\n`;
  const block = Buffer.alloc(1024 * 1024, '\n');
  async function* body() {
    yield Buffer.from(head);
    for (let sent = 0; sent < uncompressed; sent += block.length) yield block;
  }
  return buffer(Readable.from(body()).pipe(createGzip({ level: 9 })));
}

/**
 * Posts `content` as the `file` part of a multipart body sent as `encode` makes it (default:
 * gzip-compressed whole), with `Content-Encoding: encoding`.
 */
async function postEncoded(
  url: string,
  auth: Record<string, string>,
  content: string | Buffer,
  opts: {
    encoding?: string;
    encode?: (body: Buffer) => Buffer | Promise<Buffer>;
    fileName?: string;
    headers?: Record<string, string>;
  } = {},
) {
  const body = await multipart(content, { fileName: opts.fileName ?? 'claims.csv' });
  return ctx.app.inject({
    method: 'POST',
    url,
    headers: { ...auth, 'content-type': body.contentType, 'content-encoding': opts.encoding ?? 'gzip', ...opts.headers },
    payload: await (opts.encode ?? gzipSync)(body.payload),
  });
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

describe('a body sent with Content-Encoding: gzip', () => {
  it('imports the file of a gzip-compressed multipart body as if it were sent as it is', async () => {
    const company = await ctx.newCompany('Gzip body');
    const res = await postEncoded(
      '/api/v1/claims/import',
      company.auth,
      csv([validRow(), validRow(), validRow({ claim_date: '2999-01-01' })]),
    );
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ imported: 2, failed: 1 });
    // x-gzip is gzip's old name; a gzip file part inside a gzip body is decompressed twice.
    const twice = await postEncoded('/api/v1/claims/import', company.auth, gzipSync(csv([validRow()])), {
      encoding: 'x-gzip',
      fileName: 'claims.csv.gz',
    });
    expect(twice.statusCode, twice.body).toBe(200);
    expect(twice.json()).toMatchObject({ imported: 1, failed: 0 });
  });

  it('takes a gzip-compressed batch plate body', async () => {
    const company = await ctx.newCompany('Gzip body plates');
    const res = await postEncoded('/api/v1/lookups/batch', company.auth, `vehicle_registration\n${plate()}\n${plate()}\n${plate()}\n`, {
      fileName: 'plates.csv',
    });
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json().data).toMatchObject({ plates: 3 });
  });

  it('counts the decompressed bytes against IMPORT_MAX_BYTES', async () => {
    const company = await ctx.newCompany('Gzip body large');
    const text = csv(Array.from({ length: Math.ceil(MAX / 90) }, () => validRow()));
    expect(Buffer.byteLength(text)).toBeGreaterThan(MAX);
    const res = await postEncoded('/api/v1/claims/import', company.auth, text);
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().errors).toEqual({ file: [fileMessages.tooLarge(MAX)] });
  });

  it('refuses a 1 MB body that expands past the limit as a decompression bomb, before the limit is reached, storing nothing', async () => {
    const company = await ctx.newCompany('Gzip body bomb');
    // Gzip members one after the other make one gzip stream: the form's start, then 1 MB blocks of newlines.
    const block = gzipSync(Buffer.alloc(1024 * 1024, '\n'), { level: 9 });
    const encode = (body: Buffer) => {
      const head = body.subarray(0, body.indexOf('\r\n\r\n') + 4);
      const members = [gzipSync(Buffer.concat([head, Buffer.from(`${HEADER_LINE}\n`)]))];
      for (let size = members[0]!.length; size < 1024 * 1024; size += block.length) members.push(block);
      return Buffer.concat(members);
    };
    const res = await postEncoded('/api/v1/claims/import', company.auth, '', { encode });
    expect(res.statusCode, res.body).toBe(422);
    // The ratio's refusal, not the size's: it came before IMPORT_MAX_BYTES decompressed bytes.
    expect(res.json().errors).toEqual({ file: [uploadPartMessages.bodyGzipBomb] });
    expect(await ctx.deps.db.query('SELECT 1 FROM imports WHERE company_id = $1', [company.id])).toHaveLength(0);
    const files = await ctx.app.inject({ method: 'GET', url: '/api/v1/imports', headers: company.auth });
    expect(files.json().data).toEqual([]);
  });

  it('refuses a body that is not the gzip its Content-Encoding says, naming the header', async () => {
    const company = await ctx.newCompany('Gzip body damaged');
    const cut = await postEncoded('/api/v1/claims/import', company.auth, csv([validRow(), validRow()]), {
      encode: (body) => gzipSync(body).subarray(0, -12),
    });
    expect(cut.statusCode, cut.body).toBe(422);
    expect(cut.json().errors).toEqual({ file: [uploadPartMessages.bodyNotGzip] });
    const plain = await postEncoded('/api/v1/claims/import', company.auth, csv([validRow()]), { encode: (body) => body });
    expect(plain.statusCode, plain.body).toBe(422);
    expect(plain.json().errors).toEqual({ file: [uploadPartMessages.bodyNotGzip] });
  });

  it.each(['br', 'deflate', 'gzip, gzip'])(
    'refuses Content-Encoding: %s with 415 naming the header, on both upload routes',
    async (encoding) => {
      const company = await ctx.newCompany('Other encoding');
      for (const url of ['/api/v1/claims/import', '/api/v1/lookups/batch']) {
        const res = await postEncoded(url, company.auth, csv([validRow()]), { encoding });
        expect(res.statusCode, res.body).toBe(415);
        expect(res.json()).toMatchObject({ code: 'unsupported_media_type', message: uploadPartMessages.unsupportedEncoding });
        expect(res.json().message).toContain('Content-Encoding');
        expect(res.headers['accept-encoding']).toBe('gzip');
      }
      expect(await ctx.deps.db.query('SELECT 1 FROM imports WHERE company_id = $1', [company.id])).toHaveLength(0);
    },
  );
});
