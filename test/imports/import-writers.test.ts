import { randomUUID } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, submitClaim, type TestContext } from '../harness';
import { csv, docNumber, futureDate, multipart, postImport, validRow, type CsvRow, recordImport } from '../import-helpers';

/**
 * Chunks written side by side (IMPORT_WRITERS = 2 on PostgreSQL; embedded, one at a time whatever
 * the setting): a person in several chunks in flight is created once (the later chunk waits for
 * the earlier), a person given another date of birth is decided by file order, a run that stopped with any set of chunks committed (the
 * first two and the fourth, not the third) writes exactly the missing ones, and a cancel stops
 * every chunk in flight.
 */

const query = <T>(ctx: TestContext, sql: string, params: unknown[]) => ctx.deps.db.query<T>(sql, params);

/** Persons as the import left them: clients of its claims, their documents, claims per client. */
async function personsOf(ctx: TestContext, importId: string) {
  const [row] = await query<{ clients: number; documents: number; min: number; max: number }>(
    ctx,
    `SELECT count(*)::int AS clients, sum(d.n)::int AS documents, min(c.n)::int AS min, max(c.n)::int AS max
       FROM (SELECT client_id, count(*) AS n FROM claims WHERE import_id = $1 GROUP BY client_id) c
       JOIN LATERAL (SELECT count(*) AS n FROM identity_documents d WHERE d.client_id = c.client_id) d ON true`,
    [importId],
  );
  return row!;
}

describe('chunks in flight side by side, through the API (chunks of 1,000 rows)', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext({ IMPORT_CHUNK_SIZE: '1000', IMPORT_WRITERS: '2' });
  });
  afterAll(async () => ctx?.close());

  const persons = (n: number) =>
    Array.from({ length: n }, (_, i) => ({ id_number: docNumber(), date_of_birth: `19${50 + (i % 40)}-0${1 + (i % 9)}-1${i % 10}` }));
  /** Each chunk of 1,000 rows: every person once, in another order. */
  const everyChunk = (people: CsvRow[], chunks: number, change: (row: CsvRow, chunk: number, i: number) => CsvRow = (r) => r) =>
    Array.from({ length: chunks }, (_, c) =>
      people.map((_, i) => people[(i * 7 + c * 13) % people.length]!).map((p, i) => change(validRow(p), c, i)),
    ).flat();

  it('creates each of 1,000 new persons appearing in every chunk once, with its document and all its claims', async () => {
    const company = await ctx.newCompany('Same persons');
    const rows = everyChunk(persons(1000), 4);
    const res = await postImport(ctx.app, company.auth, csv(rows));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ imported: 4000, failed: 0, errors: [] });
    const { id } = (await ctx.app.inject({ method: 'GET', url: '/api/v1/imports', headers: company.auth })).json().data[0];
    expect(await personsOf(ctx, id)).toEqual({ clients: 1000, documents: 1000, min: 4, max: 4 });
  }, 120_000);

  it('decides a person given two dates of birth by file order, whichever chunk commits first', async () => {
    const company = await ctx.newCompany('Two dates');
    const people = persons(1000);
    // The second chunk gives every tenth person another date of birth: those rows fail, in row order.
    const rows = everyChunk(people, 2, (r, c, i) => (c === 1 && i % 10 === 0 ? { ...r, date_of_birth: '2001-01-01' } : r));
    const res = await postImport(ctx.app, company.auth, csv(rows));
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    const expected = rows.flatMap((r, i) => (r.date_of_birth === '2001-01-01' ? [i + 2] : []));
    expect(body).toMatchObject({ imported: 2000 - expected.length, failed: expected.length });
    expect(body.errors.map((e: { row: number; messages: object }) => e.row)).toEqual(expected);
    expect(Object.keys(body.errors[0].messages)).toEqual(['date_of_birth']);
    const { id } = (await ctx.app.inject({ method: 'GET', url: '/api/v1/imports', headers: company.auth })).json().data[0];
    expect(await personsOf(ctx, id)).toMatchObject({ clients: 1000, documents: 1000 });
  }, 120_000);
});

describe('a run stopped with any set of chunks committed (chunks of 2 rows)', () => {
  let ctx: TestContext;
  /** What the hook does in the next chunk transactions, by chunk number. */
  const hooks = new Map<number, () => Promise<void>>();
  beforeAll(async () => {
    ctx = await createTestContext(
      { IMPORT_CHUNK_SIZE: '2', IMPORT_WRITERS: '2' },
      {
        beforeChunkWrite: async (n) => {
          const hook = hooks.get(n);
          hooks.delete(n);
          await hook?.();
        },
      },
    );
  });
  afterAll(async () => ctx?.close());

  const writers = () => (ctx.deps.db.kind === 'postgres' ? 2 : 1);
  const ledger = async (id: string) =>
    (await query<{ n: number }>(ctx, 'SELECT chunk_no AS n FROM import_chunks WHERE import_id = $1 ORDER BY chunk_no', [id])).map(
      (r) => r.n,
    );

  it('writes exactly the chunks the ledger lacks: the third alone when the first, second and fourth committed', async () => {
    const company = await ctx.newCompany('Out of order');
    const person = validRow();
    // Rows 2–11, chunks 0–4; row 5 (chunk 1) and row 8 (chunk 3) fail; the person of row 2 comes
    // back in every chunk but the third (the fourth would otherwise wait for it).
    const rows = [person, validRow(), { ...person, vehicle_registration: 'XY1' }, validRow({ claim_date: futureDate() }), validRow()];
    rows.push(validRow(), { ...validRow(), amount: '-1' }, { ...person, vehicle_registration: 'XY2' }, validRow(), person);
    const id = await recordImport(ctx, company, csv(rows));
    hooks.set(2, async () => {
      throw new Error('the worker died');
    });
    await expect(ctx.deps.imports.process(id)).rejects.toThrow('the worker died');
    // Side by side, the fourth chunk was in flight beside the third, and committed.
    expect(await ledger(id)).toEqual(writers() === 2 ? [0, 1, 3] : [0, 1]);

    const outcome = await ctx.deps.imports.process(id);
    expect(outcome).toMatchObject({ status: 'completed', imported: 8, failed: 2 });
    expect(await ledger(id)).toEqual([0, 1, 2, 3, 4]);
    const data = (await ctx.app.inject({ method: 'GET', url: `/api/v1/imports/${id}`, headers: company.auth })).json().data;
    expect(data.summary.errors.map((e: { row: number }) => e.row)).toEqual([5, 8]);
    expect(data.progress).toEqual({ rows_done: 10, rows_total: 10, rows_per_second: expect.any(Number), estimated_finish_at: null });
    expect(await ctx.deps.repos.imports.countClaims(id)).toBe(8);
    expect(await personsOf(ctx, id)).toEqual({ clients: 5, documents: 5, min: 1, max: 4 });
    const failed = await ctx.app.inject({ method: 'GET', url: `/api/v1/imports/${id}/errors.csv`, headers: company.auth });
    expect(
      failed.body
        .trim()
        .split('\n')
        .slice(1)
        .map((l) => l.split(',').at(-2)),
    ).toEqual(['5', '8']);
  });

  it('checks a file of several chunks as its import then goes, leaving nothing behind (a dry run)', async () => {
    const company = await ctx.newCompany('Dry run in chunks');
    const person = validRow();
    // Chunks of 2 rows: the person of row 2 comes back in the second chunk with another date of
    // birth (row 4 fails), and in the third as first given (the same person, imported).
    const rows = [person, validRow(), { ...person, date_of_birth: '1970-01-01', vehicle_registration: 'XY1' }];
    rows.push(validRow({ claim_date: futureDate() }), { ...person, vehicle_registration: 'XY2' }, validRow());
    const body = await multipart(csv(rows));
    const dry = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims/import?dry_run=true',
      headers: { ...company.auth, 'content-type': body.contentType },
      payload: body.payload,
    });
    expect(dry.statusCode, dry.body).toBe(200);
    const checked = dry.json<{ imported: number; failed: number; errors: { row: number; messages: object }[] }>();
    expect(checked).toMatchObject({ dry_run: true, imported: 4, failed: 2 });
    expect(checked.errors.map((e) => [e.row, Object.keys(e.messages)])).toEqual([
      [4, ['date_of_birth']],
      [5, ['claim_date']],
    ]);
    const left = async (table: string) =>
      (await query<{ n: number }>(ctx, `SELECT count(*)::int AS n FROM ${table} WHERE company_id = $1`, [company.id]))[0]!.n;
    expect([await left('imports'), await left('claims')]).toEqual([0, 0]);

    const real = await postImport(ctx.app, company.auth, csv(rows));
    expect(real.statusCode, real.body).toBe(200);
    expect(real.json()).toMatchObject({ imported: checked.imported, failed: checked.failed, errors: checked.errors });
  });

  it('commits a chunk whose persons all come from the chunk before it while that one is still open', async () => {
    const company = await ctx.newCompany('No waiting');
    // Chunks 0–3, each the two persons of the chunk before it, the first new in the file.
    const [a, b] = [validRow(), validRow({ date_of_birth: '1970-01-01' })];
    const rows = [0, 1, 2, 3].flatMap((c) => [a, b].map((p) => ({ ...p, vehicle_registration: `NW${c}${p === a ? 'A' : 'B'}` })));
    const id = await recordImport(ctx, company, csv(rows));
    let laterCommitted = false;
    hooks.set(0, async () => {
      // Side by side, the chunks after it commit while the first one's claims are held open.
      if (writers() !== 2) return;
      for (let i = 0; i < 200 && !(await ledger(id)).includes(1); i++) await new Promise((r) => setTimeout(r, 50));
      laterCommitted = (await ledger(id)).includes(1);
      if (!laterCommitted) throw new Error('the second chunk waited for the first');
    });
    const outcome = await ctx.deps.imports.process(id);
    expect(outcome).toMatchObject({ status: 'completed', imported: 8, failed: 0 });
    expect(laterCommitted).toBe(writers() === 2);
    expect(await personsOf(ctx, id)).toEqual({ clients: 2, documents: 2, min: 4, max: 4 });
  });

  it('removes the persons a failed import created and left without a claim, not one a submission uses', async () => {
    const company = await ctx.newCompany('Failed persons');
    const tag = `Failed${randomUUID().slice(0, 8)}`;
    const rows = Array.from({ length: 10 }, () => validRow({ last_name: tag }));
    const id = await recordImport(ctx, company, csv(rows));
    hooks.set(2, async () => {
      throw new Error('the worker died');
    });
    await expect(ctx.deps.imports.process(id)).rejects.toThrow('the worker died');
    const persons = async () =>
      (await query<{ n: number }>(ctx, 'SELECT count(*)::int AS n FROM clients WHERE last_name = $1', [tag]))[0]!.n;
    // Chunks 0 and 1 (and, side by side, the third's persons and the fourth) are in.
    expect(await persons()).toBeGreaterThanOrEqual(4);
    // A submission finds the first row's person meanwhile.
    const first = rows[0]!;
    await submitClaim(ctx, company, {
      client: {
        first_name: first.first_name,
        last_name: tag,
        date_of_birth: first.date_of_birth,
        id_documents: [{ type: first.id_type, number: first.id_number }],
      },
    });
    await ctx.deps.imports.markFailed(id, 'error', 'the worker died');
    expect(await ctx.deps.repos.imports.countClaims(id)).toBe(0);
    expect(await persons()).toBe(1);
  });

  it('stops every chunk in flight on a cancel, leaving no claim and no person it created', async () => {
    const company = await ctx.newCompany('Cancel in flight');
    const tag = `Cancelled${randomUUID().slice(0, 8)}`;
    const id = await recordImport(ctx, company, csv(Array.from({ length: 12 }, () => validRow({ last_name: tag }))));
    // Asked while the third chunk's transaction is open, and the fourth's beside it on PostgreSQL
    // (embedded, the answer would wait for that very transaction on the one session: it comes
    // before the next chunk's).
    let cancel: Promise<{ statusCode: number }> | undefined;
    hooks.set(2, async () => {
      cancel = ctx.app.inject({ method: 'POST', url: `/api/v1/imports/${id}/cancel`, headers: company.auth });
      if (writers() === 2) await cancel;
    });
    const outcome = await ctx.deps.imports.process(id);
    expect((await cancel!).statusCode).toBe(202);
    expect(outcome.status).toBe('cancelled');
    expect(await ctx.deps.repos.imports.countClaims(id)).toBe(0);
    // Nor any person it created.
    expect((await query<{ n: number }>(ctx, 'SELECT count(*)::int AS n FROM clients WHERE last_name = $1', [tag]))[0]!.n).toBe(0);
    // The chunks after the cancel were not written.
    expect((await ledger(id)).length).toBeLessThan(6);
    const data = (await ctx.app.inject({ method: 'GET', url: `/api/v1/imports/${id}`, headers: company.auth })).json().data;
    expect(data.history.map((h: { status: string }) => h.status)).toEqual(['queued', 'processing', 'cancelled']);
  });
});
