import http from 'node:http';
import type net from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, type Company, type TestContext } from '../harness';
import { csv, postImport, validRow, waitForImport } from '../import-helpers';
import { companyWithPeople, signedIn } from '../web/web-client';

/**
 * Searches before uploads (UPLOAD_YIELD_MS): while another request is being answered, an upload's
 * reading waits for it, at most UPLOAD_YIELD_MS at a time. Here the other request is one whose
 * body never comes (it stays open as long as the test wants), over real HTTP.
 */

const importFile = () => csv(Array.from({ length: 3 }, () => validRow()));

type Server = { ctx: TestContext; company: Company; port: number };

async function serverWith(yieldMs: string): Promise<Server> {
  const ctx = await createTestContext({ UPLOAD_YIELD_MS: yieldMs });
  await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  const company = await ctx.newCompany('Yield');
  // A first upload starts what every upload uses (the inspection thread): the later ones are quick.
  expect((await postImport(ctx.app, company.auth, importFile(), { headers: { prefer: 'respond-async' } })).statusCode).toBe(202);
  return { ctx, company, port: (ctx.app.server.address() as net.AddressInfo).port };
}

/** A claim submission whose body never comes: a request being answered until `close()`. */
function openRequest(s: Server): { close: () => void; arrived: Promise<void> } {
  const req = http.request({
    host: '127.0.0.1',
    port: s.port,
    method: 'POST',
    path: '/api/v1/claims',
    headers: { ...s.company.auth, 'content-type': 'application/json', 'content-length': '1000' },
  });
  req.on('error', () => {});
  // The server's own listener (the app's hooks, the upload guard's count among them) runs first.
  const arrived = new Promise<void>((resolve) => s.ctx.app.server.once('request', () => resolve()));
  req.write('{"claim');
  return { close: () => req.destroy(), arrived };
}

/** Whether `promise` has settled half a second after the server answered a request sent after it. */
async function settledBy(s: Server, promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(() => (settled = true));
  const probe = await s.ctx.app.inject({ method: 'GET', url: '/healthz' });
  expect(probe.statusCode).toBe(200);
  await new Promise((r) => setTimeout(r, 500));
  return settled;
}

describe('an upload while another request is being answered', () => {
  let waits: Server;
  let never: Server;
  let brief: Server;
  beforeAll(async () => {
    [waits, never, brief] = await Promise.all([serverWith('60000'), serverWith('0'), serverWith('20')]);
  }, 120_000);
  afterAll(async () => {
    for (const s of [waits, never, brief]) {
      s?.ctx.app.server.closeAllConnections();
      await s?.ctx.close();
    }
  });

  it('waits for it, and is read and imported once it is over (the request gone without an answer)', async () => {
    const open = openRequest(waits);
    await open.arrived;
    const upload = postImport(waits.ctx.app, waits.company.auth, importFile(), { headers: { prefer: 'respond-async' } });
    expect(await settledBy(waits, upload)).toBe(false);
    open.close();
    const res = await upload;
    expect(res.statusCode, res.body).toBe(202);
    expect(await waitForImport(waits.ctx.app, waits.company.auth, res.json().data.id)).toMatchObject({ status: 'completed', imported: 3 });
  });

  it('in the dashboard too', async () => {
    const c = await companyWithPeople(waits.ctx);
    const web = await signedIn(waits.ctx, c.member.email);
    await web.get('/imports');
    const open = openRequest(waits);
    await open.arrived;
    const upload = web.postMultipart(
      '/imports',
      {},
      { name: 'claims.csv', content: importFile() },
      { accept: 'application/json', 'x-csrf-token': web.lastCsrf },
    );
    expect(await settledBy(waits, upload)).toBe(false);
    open.close();
    expect((await upload).statusCode).toBe(202);
  });

  it('is read at once with UPLOAD_YIELD_MS=0', async () => {
    const open = openRequest(never);
    await open.arrived;
    const res = await postImport(never.ctx.app, never.company.auth, importFile(), { headers: { prefer: 'respond-async' } });
    expect(res.statusCode, res.body).toBe(202);
    open.close();
  });

  it('is never held for good: read and imported while the other request stays open (each wait UPLOAD_YIELD_MS at most)', async () => {
    const open = openRequest(brief);
    await open.arrived;
    // 2 MB: some thirty chunks, each of which waits while the request is open.
    const rows = importFile();
    const file = rows + '\n'.repeat(2 * 1024 * 1024);
    const res = await postImport(brief.ctx.app, brief.company.auth, file, { headers: { prefer: 'respond-async' } });
    expect(res.statusCode, res.body).toBe(202);
    expect(await waitForImport(brief.ctx.app, brief.company.auth, res.json().data.id)).toMatchObject({ status: 'completed', imported: 3 });
    open.close();
  });
});
