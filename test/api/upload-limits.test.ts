import type { AddressInfo } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { fileMessages } from '../../src/domain/imports/csv-file';
import { apiError, createTestContext, type TestContext } from '../harness';
import { csv, plate, sendUpload, validRow } from '../import-helpers';
import { companyWithPeople, signedIn, type WebClient } from '../web/web-client';

/**
 * Every upload (the CSV import and the batch plate look-up, through the API and the dashboard)
 * goes one way: the same size rule, applied to the bytes as they arrive. A file of exactly
 * IMPORT_MAX_BYTES is taken; the byte past it is refused with the size 422 at once, while the
 * client is still sending, rather than once the whole body has been read. Real requests over a
 * socket, so that "still sending" is real.
 */
const MAX = 16 * 1024;
let ctx: TestContext;
let base: string;
let company: Awaited<ReturnType<typeof companyWithPeople>>;
let web: WebClient;

beforeAll(async () => {
  // A long upload timeout: an answer held until the whole body (never sent) or the upload's
  // timeout would make the test time out.
  ctx = await createTestContext({ IMPORT_MAX_BYTES: String(MAX), IMPORT_UPLOAD_TIMEOUT_SECONDS: '300' });
  await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`;
  company = await companyWithPeople(ctx, 'Uploads');
  web = await signedIn(ctx, company.member.email);
  await web.get('/imports');
});
afterAll(async () => ctx?.close());

const padded = (text: string, size: number) => Buffer.from(text + ' '.repeat(size - Buffer.byteLength(text)));
const importFile = (size: number) => padded(csv([validRow()]), size);
const plateFile = (size: number) => padded(`vehicle_registration\n${plate()}\n`, size);

/** The four upload routes, each with what it answers for a file taken. */
const routes = () => {
  const api = { headers: company.auth, fields: {} };
  const dashboard = (accept: string) => ({
    headers: { cookie: [...web.cookies].map(([k, v]) => `${k}=${v}`).join('; '), accept },
    fields: { _csrf: web.lastCsrf },
  });
  return [
    { name: 'API import', url: '/api/v1/claims/import', ...api, file: importFile, taken: 200 },
    { name: 'API batch look-up', url: '/api/v1/lookups/batch', ...api, file: plateFile, taken: 202 },
    { name: 'dashboard import', url: '/imports', ...dashboard('application/json'), file: importFile, taken: 202 },
    { name: 'dashboard batch look-up', url: '/lookups/batch', ...dashboard('text/html'), file: plateFile, taken: 303 },
  ];
};

describe('the size limit of every upload, API and dashboard', () => {
  it('takes a file of exactly IMPORT_MAX_BYTES', async () => {
    for (const route of routes()) {
      const res = await sendUpload(base, route.url, route.headers, route.fields, route.file(MAX), true);
      expect(res.status, `${route.name}: ${res.body}`).toBe(route.taken);
    }
  });

  it('refuses the byte past IMPORT_MAX_BYTES with the size 422 as it arrives, while the rest is still being sent', async () => {
    const tooLarge = fileMessages.tooLarge(MAX);
    for (const route of routes()) {
      const res = await sendUpload(base, route.url, route.headers, route.fields, route.file(MAX + 1), false);
      expect(res.status, `${route.name}: ${res.body}`).toBe(422);
      if (route.url.startsWith('/api/')) {
        expect(JSON.parse(res.body), route.name).toEqual(apiError('validation_failed', tooLarge, { file: [tooLarge] }));
      } else {
        expect(res.body, route.name).toContain(tooLarge);
      }
    }
  });
});
