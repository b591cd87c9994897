import { randomBytes } from 'node:crypto';

import { afterAll, describe, expect, it } from 'vitest';

import { generateCsv } from '../../scripts/gen-csv';
import { createTestContext, TEST_HASH_KEY, type TestContext } from '../harness';
import { postImport } from '../import-helpers';
import { exitOf, killAll, printed, removeQueueKeys, startScript, until } from '../processes';

/** `npm run worker` as the container starts it: SIGTERM lets the running import finish, then the process exits 0. */
const redisUrl = process.env.TEST_REDIS_URL!;
describe('SIGTERM to an import worker', () => {
  const prefix = `test-stop-${randomBytes(4).toString('hex')}`;
  let ctx: TestContext;
  afterAll(async () => {
    await killAll();
    await ctx?.close();
    await removeQueueKeys(redisUrl, prefix);
  });

  it('finishes the import it is running, then exits 0', async () => {
    ctx = await createTestContext({ REDIS_URL: redisUrl, QUEUE_PREFIX: prefix, IMPORT_MAX_BYTES: String(20 * 1024 * 1024) });
    const schema = (await ctx.deps.db.query<{ s: string }>('SELECT current_schema() AS s'))[0]!.s;
    const company = await ctx.newCompany('Worker stop');
    const out: string[] = [];
    const expected = await generateCsv(
      { rows: 12_000, repeat: 0.3, invalid: 0.05, delimiter: ',', seed: 11 },
      (chunk) => void out.push(chunk),
    );
    const worker = startScript('worker', {
      LOG_LEVEL: 'info',
      DATABASE_URL: process.env.TEST_DATABASE_URL!,
      DB_SEARCH_PATH: schema,
      DB_POOL_SIZE: '3',
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: prefix,
      DOCUMENT_HASH_KEY: TEST_HASH_KEY,
      DATA_DIR: ctx.config.dataDir,
      IMPORT_CHUNK_SIZE: '500',
      WORKER_CONCURRENCY: '1',
    });
    await printed(worker, 'import worker ready');
    const res = await postImport(ctx.app, company.auth, out.join(''), { headers: { prefer: 'respond-async' } });
    expect(res.statusCode, res.body).toBe(202);
    const id = res.json().data.id as string;
    await until('the import to be mid-way', async () => {
      const run = (await ctx.deps.repos.imports.findById(id))!;
      if (run.status === 'completed') throw new Error('the import finished before SIGTERM');
      return run.rowsDone > 0 || undefined;
    });
    worker.kill('SIGTERM');
    expect(await exitOf(worker)).toEqual({ code: 0, signal: null });
    const run = (await ctx.deps.repos.imports.findById(id))!;
    expect(run.status).toBe('completed');
    expect((run.imported ?? 0) + (run.failed ?? 0)).toBe(expected.rows);
    // The import was still running when the signal came: the job completed after the close began.
    const log = worker.output();
    expect(log.indexOf('worker closing')).toBeGreaterThanOrEqual(0);
    expect(log.indexOf('import job completed')).toBeGreaterThan(log.indexOf('worker closing'));
  }, 180_000);
});
