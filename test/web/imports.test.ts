import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, type TestContext, companyPrincipal } from '../harness';
import { csv, futureDate, postImport, validRow } from '../import-helpers';
import { companyWithPeople, signedIn, type WebClient } from './web-client';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx.close());

const HEADER = 'first_name,last_name,date_of_birth,id_type,id_number,claim_date,vehicle_registration,amount';
const doc = () => `P${randomBytes(5).toString('hex').toUpperCase()}`;
function fileWithErrors(today: string) {
  const secretDoc = doc();
  const rows = [
    HEADER,
    `Ona,Petraitė,1985-06-02,passport,${secretDoc},${today},AB123,100`,
    `Jonas,Jonaitis,1990-01-01,passport,${doc()},2999-01-01,CD456,50`,
    `,Kazlauskas,1970-05-05,national_id,${doc()},${today},EF789,12.345`,
    `Rūta,Rutaitė,1992-02-02,passport,${doc()},${today},GH000,1`,
  ];
  return { csv: `${rows.join('\n')}\n`, secretDoc };
}

async function waitUntilDone(web: WebClient, statusUrl: string) {
  for (let i = 0; i < 200; i++) {
    const res = await web.get(statusUrl, { accept: 'application/json' });
    const body = res.json();
    if (body.done) return body;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('import did not finish');
}

describe('import pages', () => {
  it('uploads with the page script (CSRF header, 202), follows the status, and shows each row error', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.member.email);
    await web.get('/imports');
    const { csv, secretDoc } = fileWithErrors(ctx.deps.today());
    const res = await web.postMultipart(
      '/imports',
      {},
      { name: 'claims.csv', content: csv },
      { accept: 'application/json', 'x-csrf-token': web.lastCsrf },
    );
    expect(res.statusCode, res.body).toBe(202);
    const started = res.json();
    expect(started.resultUrl).toBe(`/imports/${started.id}`);
    const status = await waitUntilDone(web, started.statusUrl);
    expect(status).toMatchObject({ status: 'completed', imported: 2, failed: 2 });

    const page = await web.get(started.resultUrl);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Import finished: 2 imported, 2 failed.');
    expect(page.body).toMatch(
      /<td class="num" data-label="Row">3<\/td><td data-label="Column"><code>claim_date<\/code><\/td><td class="wide" data-label="Problem">The claim date cannot be in the future\.<\/td>/u,
    );
    expect(page.body).toMatch(
      /<td class="num" data-label="Row">4<\/td><td data-label="Column"><code>first_name<\/code><\/td><td class="wide" data-label="Problem">The first name field is required\.<\/td>/u,
    );
    expect(page.body).toMatch(/<td class="num" data-label="Row">4<\/td><td data-label="Column"><code>amount<\/code><\/td>/u);
    expect(page.body).not.toContain(secretDoc);

    const csvRes = await web.get(`/imports/${started.id}/failed-rows.csv`);
    expect(csvRes.statusCode).toBe(200);
    expect(csvRes.headers['content-type']).toMatch(/text\/csv/u);
    expect(csvRes.headers['content-disposition']).toMatch(/attachment; filename="import-[0-9a-f]{8}-failed-rows\.csv"/u);
    // The same file as the API's errors.csv: the uploaded columns (id_number empty), then row and errors.
    const lines = csvRes.body
      .replace(/^\uFEFF/u, '')
      .trim()
      .split('\n');
    expect(lines[0]).toBe(`${HEADER},row,errors`);
    expect(lines).toContain(
      `Jonas,Jonaitis,1990-01-01,passport,,2999-01-01,CD456,50,3,claim_date: The claim date cannot be in the future.`,
    );
    expect(lines.length).toBe(3);

    const history = await web.get('/imports');
    expect(history.body).toContain(`/imports/${started.id}`);
    expect(history.body).toContain('claims.csv');
  });

  it('works without the page script: the form field carries the token, the answer is the results page', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.member.email);
    await web.get('/imports');
    const { csv } = fileWithErrors(ctx.deps.today());
    const res = await web.postMultipart('/imports', { _csrf: web.lastCsrf }, { name: 'plain.csv', content: csv });
    expect(res.statusCode, res.body).toBe(303);
    const result = await web.get(res.headers.location!);
    expect(result.body).toContain('Import finished: 2 imported, 2 failed.');
  });

  it('"Check only" shows what an import would give and writes nothing', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.member.email);
    await web.get('/imports');
    const { csv } = fileWithErrors(ctx.deps.today());
    const res = await web.postMultipart('/imports', { _csrf: web.lastCsrf, check_only: 'on' }, { name: 'check.csv', content: csv });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toContain('2 rows would be imported, 2 would fail.');
    expect(res.body).toMatch(/<td class="num" data-label="Row">3<\/td><td data-label="Column"><code>claim_date<\/code><\/td>/u);
    const page = await ctx.deps.imports.list(companyPrincipal(c), { limit: 10 });
    expect(page.data).toEqual([]);
  });

  it('refuses an upload without a valid CSRF token and imports nothing', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.member.email);
    await web.get('/imports');
    const { csv } = fileWithErrors(ctx.deps.today());
    for (const fields of [{}, { _csrf: 'forged' }] as Record<string, string>[]) {
      const res = await web.postMultipart('/imports', fields, { name: 'claims.csv', content: csv });
      expect(res.statusCode).toBe(403);
    }
    const json = await web.postMultipart(
      '/imports',
      {},
      { name: 'claims.csv', content: csv },
      { accept: 'application/json', 'x-csrf-token': 'forged' },
    );
    expect(json.statusCode).toBe(403);
    const page = await ctx.deps.imports.list(companyPrincipal(c), { limit: 10 });
    expect(page.data).toEqual([]);
  });

  it('shows a file-level problem next to the file field', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.member.email);
    await web.get('/imports');
    const bad = await web.postMultipart('/imports', { _csrf: web.lastCsrf }, { name: 'claims.csv', content: 'first_name,surname\nA,B\n' });
    expect(bad.statusCode).toBe(422);
    expect(bad.body).toMatch(/id="import-file-error">The header row/u);
    const none = await web.postMultipart('/imports', { _csrf: web.lastCsrf }, null);
    expect(none.statusCode).toBe(422);
    expect(none.body).toContain('Choose a CSV file to upload: no file was chosen.');
    // What a browser sends when no file was chosen: a file part with no name and no bytes.
    const empty = await web.postMultipart('/imports', { _csrf: web.lastCsrf }, { name: '', content: '' });
    expect(empty.statusCode).toBe(422);
    expect(empty.body).toMatch(/id="import-file-error">Choose a CSV file to upload: no file was chosen\./u);
    expect(empty.body).not.toContain('must be a file of type');
    const xlsx = await web.postMultipart(
      '/imports',
      {},
      { name: 'claims.xlsx', content: 'x' },
      { accept: 'application/json', 'x-csrf-token': web.lastCsrf },
    );
    expect(xlsx.statusCode).toBe(422);
    expect(xlsx.json().message).toMatch(/The file must be a file of type: csv, txt\./u);
  });

  it("keeps one company's imports from another: 404 for results, status and download; not in the history", async () => {
    const a = await companyWithPeople(ctx);
    const b = await companyWithPeople(ctx);
    const aWeb = await signedIn(ctx, a.member.email);
    await aWeb.get('/imports');
    const { csv } = fileWithErrors(ctx.deps.today());
    const started = (
      await aWeb.postMultipart(
        '/imports',
        {},
        { name: 'alpha-secret.csv', content: csv },
        { accept: 'application/json', 'x-csrf-token': aWeb.lastCsrf },
      )
    ).json();
    await waitUntilDone(aWeb, started.statusUrl);
    const bWeb = await signedIn(ctx, b.admin.email);
    expect((await bWeb.get(`/imports/${started.id}`)).statusCode).toBe(404);
    expect((await bWeb.get(`/imports/${started.id}/status`, { accept: 'application/json' })).statusCode).toBe(404);
    expect((await bWeb.get(`/imports/${started.id}/failed-rows.csv`)).statusCode).toBe(404);
    expect((await bWeb.get('/imports')).body).not.toContain('alpha-secret.csv');
  });
});

describe('imports at scale', () => {
  it('asks before importing the same file again, naming the earlier import; the API imports it as asked', async () => {
    const c = await companyWithPeople(ctx);
    const web = await signedIn(ctx, c.member.email);
    await web.get('/imports');
    const { csv } = fileWithErrors(ctx.deps.today());
    const first = await web.postMultipart('/imports', { _csrf: web.lastCsrf }, { name: 'november.csv', content: csv });
    expect(first.statusCode).toBe(303);
    const firstId = first.headers.location!.split('/').pop()!;

    // Again, under another name: a confirmation page that names the earlier import; nothing started.
    await web.get('/imports');
    const again = await web.postMultipart('/imports', { _csrf: web.lastCsrf }, { name: 'november-copy.csv', content: csv });
    expect(again.statusCode).toBe(303);
    expect(again.headers.location).toBe('/imports/confirm');
    const ask = await web.get('/imports/confirm');
    expect(ask.body).toContain('Import this file again?');
    expect(ask.body).toContain(`<a href="/imports/${firstId}">november.csv</a> (2 claims imported)`);
    const principal = companyPrincipal(c);
    expect((await ctx.deps.imports.list(principal, { limit: 10 })).data).toHaveLength(1);

    // "Do not import it": nothing more; the page script's upload gets a 409 with the page to go to.
    const dropped = await web.post('/imports/confirm', { action: 'cancel' });
    expect(dropped.headers.location).toBe('/imports?dropped=1');
    expect((await ctx.deps.imports.list(principal, { limit: 10 })).data).toHaveLength(1);
    await web.get('/imports');
    const scripted = await web.postMultipart(
      '/imports',
      {},
      { name: 'november.csv', content: csv },
      { accept: 'application/json', 'x-csrf-token': web.lastCsrf },
    );
    expect(scripted.statusCode).toBe(409);
    expect(scripted.json()).toEqual({ message: 'This file was imported before.', confirmUrl: '/imports/confirm' });
    await web.get('/imports/confirm');
    const confirmed = await web.post('/imports/confirm', { action: 'import' });
    expect(confirmed.statusCode).toBe(303);
    expect((await ctx.deps.imports.list(principal, { limit: 10 })).data).toHaveLength(2);
    // Without a pending file the confirmation page leads back to the upload.
    expect((await web.get('/imports/confirm')).headers.location).toBe('/imports');

    // The API is unchanged: the same file is imported without a question.
    const api = await postImport(ctx.app, c.auth, csv);
    expect(api.statusCode).toBe(200);
  });

  it('groups the row errors by column and message with counts, then pages them; shows the duration', async () => {
    const c = await companyWithPeople(ctx);
    const rows = Array.from({ length: 130 }, (_, i) => validRow(i % 2 ? { claim_date: futureDate() } : { first_name: '' }));
    await postImport(ctx.app, c.auth, csv(rows));
    const principal = companyPrincipal(c);
    const [run] = (await ctx.deps.imports.list(principal, { limit: 1 })).data;
    const web = await signedIn(ctx, c.member.email);
    const page = await web.get(`/imports/${run!.id}`);
    const groups = [
      ...page.body.matchAll(
        /<tr><td data-label="Column"><code>(\w+)<\/code><\/td><td class="wide" data-label="Problem">([^<]+)<\/td><td class="num" data-label="Rows">(\d+)<\/td><td class="num" data-label="First row">(\d+)<\/td><\/tr>/gu,
      ),
    ];
    expect(groups.map((g) => [g[1], g[2], g[3], g[4]])).toEqual([
      ['first_name', 'The first name field is required.', '65', '2'],
      ['claim_date', 'The claim date cannot be in the future.', '65', '3'],
    ]);
    expect(page.body).toContain("Each row's problems (1–100 of 130)");
    expect(page.body.match(/data-label="Row"/gu)).toHaveLength(100);
    expect(page.body).toMatch(/ · took [\d.,]+ s<\/p>/u);
    const second = await web.get(`/imports/${run!.id}?page=2`);
    expect(second.body.match(/data-label="Row"/gu)).toHaveLength(30);
    expect(second.body).toContain('<td class="num" data-label="Row">131</td>');
    const list = await web.get('/imports');
    expect(list.body).toMatch(/<td class="num" data-label="Took">[\d.,]+ s<\/td>/u);
  });
});
