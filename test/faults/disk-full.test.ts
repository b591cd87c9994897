import { Transform, type Readable } from 'node:stream';

import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import type { ObjectStore } from '../../src/domain/storage';
import { apiError, claimBody, createTestContext, logSink, type TestContext } from '../harness';
import { csv, postImport, postLookupBatch, validRow } from '../import-helpers';

/**
 * A full disk, simulated at the seams the tests control rather than by filling the machine's
 * disk: the database refuses writes as PostgreSQL (and PGlite) do when they cannot extend a file
 * (SQLSTATE 53100 disk_full, raised by a trigger of the test's own schema), and the uploads' store
 * fails its writes with the operating system's ENOSPC. Each is a named condition: 503
 * `storage_full` with Retry-After for a write, 507 `insufficient_storage` for an upload, counted
 * in claims_disk_full_total, one error line a minute naming it, and reported by /readyz; never a
 * 500. Nothing partial is left, and writes work again at once when space returns.
 */
const log = logSink<{ level: number; msg: string; where?: string }>();
const logger = pino({ level: 'info' }, log.stream);

/** ENOSPC as fs gives it, after `after` bytes of the file have been written. */
const noSpaceAfter = (after: number) => {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      seen += chunk.length;
      if (seen <= after) return done(null, chunk);
      done(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' }));
    },
  });
};

let full = { storage: false };
/** The configured store, except that while `full.storage` its writes fail with ENOSPC part-way through the file. */
const fillable = (store: ObjectStore): ObjectStore => ({
  ...store,
  kind: store.kind,
  list: (prefix) => store.list(prefix),
  putStream(key, source: Readable, opts) {
    if (!full.storage) return store.putStream(key, source, opts);
    const failing = noSpaceAfter(1024);
    source.on('error', (err) => failing.destroy(err));
    // The store's own write takes the first error (as it takes fs's); later writes of the source fail quietly.
    failing.on('error', () => {});
    return store.putStream(key, source.pipe(failing), opts);
  },
});

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({}, { logger, storage: fillable });
});
afterAll(async () => ctx?.close());
afterEach(async () => {
  full = { storage: false };
  await ctx.deps.db.exec('DROP TRIGGER IF EXISTS disk_full ON claims; DROP TRIGGER IF EXISTS disk_full ON imports');
});

/** The database's disk full for inserts into `table`, as PostgreSQL reports a file it cannot extend. */
async function fillDatabase(table: 'claims' | 'imports') {
  await ctx.deps.db.exec(`
    CREATE OR REPLACE FUNCTION disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'could not extend file "base/16384/16397": No space left on device'
        USING ERRCODE = 'disk_full', HINT = 'Check free disk space.';
    END $$;
    CREATE TRIGGER disk_full BEFORE INSERT ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION disk_full();`);
}

const counted = async (where: 'database' | 'storage') => {
  const metric = await ctx.deps.metrics.registry.getSingleMetric('claims_disk_full_total')!.get();
  return metric.values.find((v) => v.labels.where === where)?.value ?? 0;
};
const diskFullLines = () => log.records().filter((l) => l.level === 50 && l.msg.startsWith('disk full'));
const storedFiles = async (companyId: string) => {
  const keys: string[] = [];
  for await (const o of ctx.deps.storage.list(`imports/${companyId}/`)) keys.push(o.key);
  for await (const o of ctx.deps.storage.list(`lookup-batches/${companyId}/`)) keys.push(o.key);
  return keys;
};

describe("the database's disk full", () => {
  it('answers submissions 503 storage_full with Retry-After (never 500), counts each, logs one error line, reports it in /readyz, and works again once space returns', async () => {
    const company = await ctx.newCompany('Disk full');
    await fillDatabase('claims');
    const before = await counted('database');
    const logged = diskFullLines().length;
    for (let i = 0; i < 3; i++) {
      const res = await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: claimBody() });
      expect(res.statusCode, res.body).toBe(503);
      expect(res.headers['retry-after']).toBe('60');
      expect(res.json()).toEqual(
        apiError('storage_full', 'The registry cannot write right now: its storage is full. Nothing was changed; try again later.'),
      );
    }
    expect((await counted('database')) - before).toBe(3);
    // One line names it, however many writes it refused within the minute (a line each was 200 lines for 200 requests).
    expect(diskFullLines().length - logged).toBeLessThanOrEqual(1);
    expect(diskFullLines().at(-1)).toMatchObject({
      where: 'database',
      msg: expect.stringContaining('disk full: the database cannot write'),
    });
    const ready = await ctx.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toMatchObject({ status: 'disk_full', disk_full: { where: 'database' } });
    // Reads go on.
    const search = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims/search-by-plate',
      headers: company.auth,
      payload: { vehicle_registration: 'AB123C' },
    });
    expect(search.statusCode).toBe(200);

    await ctx.deps.db.exec('DROP TRIGGER disk_full ON claims');
    const again = await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: claimBody() });
    expect(again.statusCode, again.body).toBe(201);
  });

  it('answers an upload 507 insufficient_storage when the import cannot be recorded, and leaves its file nowhere', async () => {
    const company = await ctx.newCompany('Disk full upload');
    await fillDatabase('imports');
    const before = await counted('database');
    const res = await postImport(ctx.app, company.auth, csv([validRow(), validRow()]));
    expect(res.statusCode, res.body).toBe(507);
    expect(res.json()).toEqual(
      apiError('insufficient_storage', 'There is no storage space left for this file right now; nothing was stored. Try again later.'),
    );
    expect((await counted('database')) - before).toBe(1);
    expect(await storedFiles(company.id)).toEqual([]);
  });
});

describe("the uploads' disk full", () => {
  it('answers an import upload and a batch look-up 507 insufficient_storage, counts them, leaves no partial file, and takes uploads again once space returns', async () => {
    const company = await ctx.newCompany('Storage full');
    full.storage = true;
    const before = await counted('storage');
    const rows = Array.from({ length: 200 }, () => validRow());
    const res = await postImport(ctx.app, company.auth, csv(rows));
    expect(res.statusCode, res.body).toBe(507);
    expect(res.headers['retry-after']).toBe('60');
    expect(res.json().code).toBe('insufficient_storage');
    const batch = await postLookupBatch(
      ctx.app,
      company.auth,
      ['vehicle_registration', ...rows.map((r) => r.vehicle_registration)].join('\n'),
    );
    expect(batch.statusCode, batch.body).toBe(507);
    expect((await counted('storage')) - before).toBe(2);
    expect(await storedFiles(company.id)).toEqual([]);
    const ready = await ctx.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.json()).toMatchObject({ status: 'disk_full', disk_full: { where: 'storage' } });

    full.storage = false;
    const again = await postImport(ctx.app, company.auth, csv(rows));
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json()).toMatchObject({ imported: 200, failed: 0 });
  });
});
