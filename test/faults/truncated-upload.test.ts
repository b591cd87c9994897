import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, type TestContext } from '../harness';

/**
 * An upload whose multipart body ends without its closing boundary (a client that gave up, a
 * proxy that cut the body) is a 422 at once, and the partial file is removed, whether it is an
 * import or a batch plate look-up (one multipart reader for both). Before, it was a
 * 500 on the embedded database and, on PostgreSQL, no answer until the upload timeout. A raw
 * HTTP request over a real socket, as curl sends it.
 */
let ctx: TestContext;
let port: number;
beforeAll(async () => {
  // A long upload timeout: a handler waiting on the storage write would make the test time out.
  ctx = await createTestContext({ IMPORT_UPLOAD_TIMEOUT_SECONDS: '300' });
  await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  port = (ctx.app.server.address() as net.AddressInfo).port;
});
afterAll(async () => ctx?.close());

function rawRequest(head: string, body: Buffer): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (d) => {
      chunks.push(d);
      const text = Buffer.concat(chunks).toString('utf8');
      const headEnd = text.indexOf('\r\n\r\n');
      const length = /content-length: *(\d+)/iu.exec(text)?.[1];
      if (headEnd >= 0 && length !== undefined && Buffer.byteLength(text.slice(headEnd + 4)) >= Number(length)) {
        socket.end();
        resolve({ status: Number(text.split(' ')[1]), text: text.slice(headEnd + 4) });
      }
    });
    socket.on('error', reject);
    socket.on('close', () => reject(new Error(`closed without a complete answer: ${Buffer.concat(chunks).toString('utf8')}`)));
    socket.write(head);
    socket.write(body);
  });
}

describe('an upload cut short', () => {
  it('is a 422 on the file at once, with nothing stored and nothing recorded: the import and the batch look-up alike', async () => {
    const company = await ctx.newCompany();
    const routes = [
      { url: '/api/v1/claims/import', header: 'first_name,last_name,date_of_birth,id_type,id_number,claim_date,vehicle_registration' },
      { url: '/api/v1/lookups/batch', header: 'vehicle_registration' },
    ];
    for (const { url, header } of routes) {
      const body = Buffer.from(`--x\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\n\r\n${header}\r\nabc`);
      const head =
        `POST ${url} HTTP/1.1\r\nHost: 127.0.0.1\r\n${Object.entries(company.auth)
          .map(([k, v]) => `${k}: ${v}`)
          .join('\r\n')}\r\n` +
        `Accept: application/json\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: ${body.length}\r\n\r\n`;
      const res = await rawRequest(head, body);
      expect(res.status, `${url}: ${res.text}`).toBe(422);
      const json = JSON.parse(res.text) as { message: string; errors: { file: string[] } };
      expect(json.errors.file).toEqual([json.message]);
      expect(json.message).toMatch(/incomplete|cut short|ended/i);
    }

    const list = await ctx.app.inject({ method: 'GET', url: '/api/v1/imports', headers: company.auth });
    expect(list.json().data).toEqual([]);
    const batches = await ctx.deps.db.query<{ n: number }>('SELECT count(*)::int AS n FROM lookup_batches WHERE company_id = $1', [
      company.id,
    ]);
    expect(batches[0]!.n).toBe(0);
    for (const folder of ['imports', 'lookup-batches']) {
      const dir = path.join(ctx.config.dataDir, 'imports', folder, company.id);
      expect(fs.existsSync(dir) ? fs.readdirSync(dir) : [], folder).toEqual([]);
    }
  });
});
