import { Transform, type Readable } from 'node:stream';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { answerTime } from '../../src/domain/dates';
import type { ObjectStore } from '../../src/domain/storage';
import { createTestContext, type TestContext } from '../harness';
import { csv, postImport, validRow } from '../import-helpers';
import { until } from '../processes';
import { companyWithPeople, signedIn } from '../web/web-client';

/**
 * An import's pace for a person planning around it (issue 56): rows a second and the expected
 * finish, on GET /imports/{id}, the list and the dashboard's page, once a tenth of the rows is
 * done; the time is the service's clock, which the test sets. The import's file is read from
 * storage up to a point and then held, so that the import stays at a known number of rows.
 */
const CHUNK = 10;
/** The service's clock while a test sets it. */
let clock: number | undefined;
/** The reads of the files under `prefix` give `bytes` bytes, then wait for `released`. */
let hold: { prefix: string; bytes: number; released: Promise<void> } | undefined;

/** `source` up to `bytes`, the rest once `released`. */
function heldAfter(source: Readable, bytes: number, released: Promise<void>): Readable {
  let seen = 0;
  const out = new Transform({
    transform(chunk: Buffer, _enc, done) {
      const room = Math.max(0, bytes - seen);
      seen += chunk.length;
      if (chunk.length <= room) return done(null, chunk);
      if (room > 0) this.push(chunk.subarray(0, room));
      void released.then(() => done(null, chunk.subarray(room)));
    },
  });
  source.on('error', (err) => out.destroy(err));
  out.on('close', () => source.destroy());
  return source.pipe(out);
}

const holding = (store: ObjectStore): ObjectStore => ({
  ...store,
  kind: store.kind,
  list: (prefix) => store.list(prefix),
  async getStream(key) {
    const source = await store.getStream(key);
    return hold && key.startsWith(hold.prefix) ? heldAfter(source, hold.bytes, hold.released) : source;
  },
});

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ IMPORT_CHUNK_SIZE: String(CHUNK) }, { now: () => clock ?? Date.now(), storage: holding });
});
afterAll(async () => ctx?.close());

type Progress = { rows_done: number; rows_total: number; rows_per_second: number | null; estimated_finish_at: string | null };

/**
 * Imports `rows` rows whose file is read up to the end of its 35th row and then held: the first
 * two chunks commit (the third waits for the fourth to be read), so the import stays processing
 * at 20 rows done. Resolves with its id, the time processing began (ms) and the hold's release.
 */
async function importHeldAt20(company: { id: string; auth: Record<string, string> }, rows: number) {
  const text = csv(Array.from({ length: rows }, () => validRow()));
  const lines = text.split('\n');
  let released!: () => void;
  hold = {
    prefix: `imports/${company.id}/`,
    bytes: Buffer.byteLength(`${lines.slice(0, 36).join('\n')}\n`),
    released: new Promise<void>((resolve) => (released = resolve)),
  };
  const res = await postImport(ctx.app, company.auth, text, { headers: { prefer: 'respond-async' } });
  expect(res.statusCode, res.body).toBe(202);
  // Queued (or just started): no pace yet.
  expect(res.json().data.progress).toMatchObject({ rows_done: 0, rows_per_second: null, estimated_finish_at: null });
  const id = res.json().data.id as string;
  const progress = () => ctx.app.inject({ method: 'GET', url: `/api/v1/imports/${id}`, headers: company.auth });
  await until('the import to hold at 20 rows done', async () => (await progress()).json().data.progress.rows_done === 20, 20_000);
  const run = await ctx.deps.repos.imports.findById(id);
  const started = Date.parse(run!.history.find((h) => h.status === 'processing')!.at);
  return { id, started, release: released, progress: async () => (await progress()).json().data as { status: string; progress: Progress } };
}

describe('the pace of an import', () => {
  it('shows rows a second and the expected finish once a tenth of the rows is done, then the final average', async () => {
    const company = await companyWithPeople(ctx, 'Pace');
    const web = await signedIn(ctx, company.member.email);
    const run = await importHeldAt20(company, 100);
    try {
      // 20 rows in the 5 seconds since processing began: 4 a second, the 80 left in 20 seconds.
      clock = run.started + 5000;
      const expected: Progress = {
        rows_done: 20,
        rows_total: 100,
        rows_per_second: 4,
        estimated_finish_at: answerTime(run.started + 25_000),
      };
      expect(await run.progress()).toMatchObject({ status: 'processing', progress: expected });
      const list = await ctx.app.inject({ method: 'GET', url: '/api/v1/imports', headers: company.auth });
      expect(list.json().data.find((i: { id: string }) => i.id === run.id).progress).toEqual(expected);
      // Five seconds later with no more rows: 2 a second, 40 more seconds.
      clock = run.started + 10_000;
      expect((await run.progress()).progress).toMatchObject({ rows_per_second: 2, estimated_finish_at: answerTime(run.started + 50_000) });

      const page = await web.get(`/imports/${run.id}`);
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('About 2 rows a second: expected to finish around');
      expect(page.body).toContain(`<time datetime="${new Date(run.started + 50_000).toISOString()}">`);
      const status = await web.get(`/imports/${run.id}/status`, { accept: 'application/json' });
      expect(status.json()).toMatchObject({ rowsPerSecond: 2, estimatedFinishAt: new Date(run.started + 50_000).toISOString() });
    } finally {
      run.release();
      hold = undefined;
    }
    const done = await until('the import to complete', async () => {
      const data = await run.progress();
      return data.status === 'completed' ? data : undefined;
    });
    // The final average: every row over the time from processing's start to its completion.
    const history = (await ctx.deps.repos.imports.findById(run.id))!.history;
    const completed = Date.parse(history.find((h) => h.status === 'completed')!.at);
    expect(done.progress).toEqual({
      rows_done: 100,
      rows_total: 100,
      rows_per_second: Math.round((100_000 / (completed - run.started)) * 10) / 10,
      estimated_finish_at: null,
    });
    clock = undefined;
    expect((await web.get(`/imports/${run.id}`)).body).toMatch(
      /<p class="hint" id="run-pace">Processed at about [\d,]+ rows a second\.<\/p>/u,
    );
  }, 60_000);

  it('shows neither before a tenth of the rows is done, nor while queued', async () => {
    const company = await companyWithPeople(ctx, 'Slow start');
    const web = await signedIn(ctx, company.member.email);
    // 20 of 300 rows: under a tenth.
    const run = await importHeldAt20(company, 300);
    try {
      clock = run.started + 5000;
      expect(await run.progress()).toMatchObject({
        status: 'processing',
        progress: { rows_done: 20, rows_total: 300, rows_per_second: null, estimated_finish_at: null },
      });
      expect((await web.get(`/imports/${run.id}`)).body).toContain(
        'The pace and the expected finish show once a tenth of the rows is done.',
      );
    } finally {
      run.release();
      hold = undefined;
      clock = undefined;
    }
    await until('the import to complete', async () => (await run.progress()).status === 'completed');
  }, 60_000);
});
