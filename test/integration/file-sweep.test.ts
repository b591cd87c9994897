import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, type TestContext } from '../harness';
import { csv, postImport, validRow } from '../import-helpers';

/**
 * No uploaded file is left behind: the daily purge (`npm run admin -- purge`, and the retention
 * schedule) sweeps the store of every file whose import or batch look-up has ended, and of files
 * that belong to none once a day old (an upload whose process was killed before it was recorded),
 * and counts them (`files_deleted`, see registry-retention.test.ts). A file of a queued import, and
 * a fresh upload not recorded yet, stay.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx?.close());

const put = (key: string) =>
  ctx.deps.storage.putStream(key, Readable.from([Buffer.from('first_name\n')]), { maxBytes: 100, timeoutMs: 5000 });
const keys = async (prefix: string) => {
  const found: string[] = [];
  for await (const o of ctx.deps.storage.list(prefix)) found.push(o.key);
  return found.sort();
};
/** Backdates a stored file (the local store keeps them under DATA_DIR/imports). */
const age = (key: string, days: number) => {
  const when = new Date(Date.now() - days * 86_400_000);
  fs.utimesSync(path.join(ctx.config.dataDir, 'imports', ...key.split('/')), when, when);
};

describe('the daily sweep of uploaded files', () => {
  it("removes an ended import's file and day-old orphans, keeps a queued import's file and fresh uploads, and counts what it removed", async () => {
    const company = await ctx.newCompany('Sweep');
    const res = await postImport(ctx.app, company.auth, csv([validRow()]));
    expect(res.statusCode, res.body).toBe(200);
    const [done] = await ctx.deps.db.query<{ objectKey: string }>('SELECT object_key AS "objectKey" FROM imports WHERE company_id = $1', [
      company.id,
    ]);
    // The completed import's file, as a delete that failed (the store was down) would have left it.
    await put(done!.objectKey);
    // A queued import (never enqueued here) keeps its file.
    const queued = randomUUID();
    const queuedKey = `imports/${company.id}/${queued}`;
    await ctx.deps.repos.imports.insert({
      id: queued,
      companyId: company.id,
      fileName: 'q.csv',
      objectKey: queuedKey,
      sizeBytes: 11,
      rowsTotal: 0,
    });
    await put(queuedKey);
    // Files of no import or batch: two days old (removed), and one just uploaded (kept: it may become an import).
    const oldOrphan = `imports/${company.id}/${randomUUID()}`;
    const oldBatchOrphan = `lookup-batches/${company.id}/${randomUUID()}`;
    const freshOrphan = `imports/${company.id}/${randomUUID()}`;
    for (const key of [oldOrphan, oldBatchOrphan, freshOrphan]) await put(key);
    age(oldOrphan, 2);
    age(oldBatchOrphan, 2);

    const purged = await ctx.deps.registry.purge();
    expect(purged.files).toBe(3);
    expect(await keys(`imports/${company.id}/`)).toEqual([queuedKey, freshOrphan].sort());
    expect(await keys(`lookup-batches/${company.id}/`)).toEqual([]);
    expect((await ctx.deps.registry.purge()).files).toBe(0);
  });
});
