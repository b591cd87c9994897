import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, type Company, type TestContext } from '../harness';
import { csv, postImportOverSocket, postLookupBatch, validRow, waitForImport } from '../import-helpers';
import { companyWithPeople, signedIn } from '../web/web-client';
import { YOUNG_COLLECTION_EVERY_BYTES } from '../../src/upload-guard';

/**
 * While uploads arrive, the server asks V8 for a young collection every YOUNG_COLLECTION_EVERY_BYTES
 * read (src/upload-guard.ts), so that the sockets' dead chunks are freed before V8 collects the
 * whole heap for them. Here the collection is counted, for the uploads of each kind.
 */
let ctx: TestContext;
let company: Company;
let collections = 0;
beforeAll(async () => {
  ctx = await createTestContext({ IMPORT_MAX_BYTES: String(64 * 1024 * 1024) }, { youngCollection: () => collections++ });
  company = await ctx.newCompany('Young');
}, 120_000);
afterAll(async () => {
  ctx?.app.server.closeAllConnections();
  await ctx?.close();
});

describe('young collections while uploads arrive', () => {
  it('one every 4 MB of an import read, and the file imported whole', async () => {
    const rows = csv(Array.from({ length: 5 }, () => validRow()));
    // Blank lines after the rows: read, checked and stored like any byte.
    const file = rows + '\n'.repeat(2.5 * YOUNG_COLLECTION_EVERY_BYTES);
    const before = collections;
    // Over a socket, as a client sends it: the server reads it a socket's read at a time.
    const id = await postImportOverSocket(ctx.app, company.auth, file);
    // Two thresholds passed (with what earlier uploads left below the next one, perhaps a third).
    expect(collections - before).toBeGreaterThanOrEqual(2);
    expect(collections - before).toBeLessThanOrEqual(3);
    expect(await waitForImport(ctx.app, company.auth, id)).toMatchObject({ status: 'completed', imported: 5 });
  });

  it('and for a batch plate look-up', async () => {
    const before = collections;
    const plates = 'vehicle_registration\nAB123\n' + '\n'.repeat(YOUNG_COLLECTION_EVERY_BYTES + 1);
    const res = await postLookupBatch(ctx.app, company.auth, plates);
    expect(res.statusCode, res.body).toBeLessThan(300);
    expect(collections - before).toBeGreaterThanOrEqual(1);
  });

  it("and for the dashboard's upload form", async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.member.email);
    await web.get('/imports');
    const before = collections;
    const file = csv([validRow()]) + '\n'.repeat(YOUNG_COLLECTION_EVERY_BYTES + 1);
    const res = await web.postMultipart(
      '/imports',
      {},
      { name: 'claims.csv', content: file },
      { accept: 'application/json', 'x-csrf-token': web.lastCsrf },
    );
    expect(res.statusCode, res.body).toBe(202);
    expect(collections - before).toBeGreaterThanOrEqual(1);
  });
});
