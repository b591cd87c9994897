import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

import { Queue } from 'bullmq';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { generateCsv } from '../../scripts/gen-csv';
import { normalizePlate } from '../../src/domain/claims/claim';
import { importJobId, IMPORT_QUEUE } from '../../src/workers/queues';
import { createTestContext, TEST_HASH_KEY, type Company, type TestContext } from '../harness';
import { multipart } from '../import-helpers';
import { freePort, kill, killAll, printed, removeQueueKeys, startScript, until, type Child } from '../processes';

/**
 * Many imports at once, as in production: two API processes (`npm start`) and two workers
 * (`npm run worker`) on one PostgreSQL, one Redis and one S3-compatible store (s3rver). Twenty
 * companies upload at once, over both APIs: each import completes with exactly its file's rows,
 * none lost or doubled, none retried after a deadlock or a serialization failure. Then the
 * fairness: one company's 19 queued files do not hold up another company's one file.
 */
const redisUrl = process.env.TEST_REDIS_URL!;
const prefix = `test-many-${randomBytes(4).toString('hex')}`;
const ROWS = 3000;
const FAIR_ROWS = 2000;
const WORKER_CONCURRENCY = 2;

type S3rverInstance = { run(): Promise<{ port: number }>; close(): Promise<void> };
const S3rver = createRequire(import.meta.url)('s3rver') as new (opts: Record<string, unknown>) => S3rverInstance;

/** A claim as a comparable key: plate, date, type, amount, status (the crash tests' key). */
const keyOf = (plateRaw: string, date: string, type: string, amount: string, status: string) =>
  [normalizePlate(plateRaw), date, type, amount === '' ? '' : Number(amount).toFixed(2), status === '' ? 'filed' : status].join('|');

/** A file from the project's generator (30% repeated persons, 5% invalid rows) and what it must give. */
async function claimsFile(rows: number, seed: number) {
  const out: string[] = [];
  const stats = await generateCsv({ rows, repeat: 0.3, invalid: 0.05, delimiter: ',', seed }, (chunk) => void out.push(chunk));
  const text = out.join('');
  /** The claims the valid rows give, each once, given the rows the import reported as failed. */
  const expectedKeys = (failedRows: number[]) => {
    const failed = new Set(failedRows);
    const records: string[][] = parse(text, { relax_column_count: true });
    const header = records.shift()!;
    const at = (name: string) => header.indexOf(name);
    return records
      .filter((_, i) => !failed.has(i + 2))
      .map((r) => keyOf(r[at('vehicle_registration')]!, r[at('claim_date')]!, r[at('claim_type')]!, r[at('amount')]!, r[at('status')]!))
      .sort();
  };
  return { text, stats, expectedKeys };
}

describe('many imports at once, on two API processes and two workers', () => {
  let ctx: TestContext;
  let s3: S3rverInstance;
  let s3Dir: string;
  let env: Record<string, string>;
  let apis: string[] = [];
  let workers: Child[] = [];
  let queue: Queue;

  beforeAll(async () => {
    s3Dir = fs.mkdtempSync(path.join(os.tmpdir(), 's3rver-'));
    s3 = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: s3Dir });
    const { port: s3Port } = await s3.run();
    const storage = {
      S3_ENDPOINT: `http://127.0.0.1:${s3Port}`,
      S3_ACCESS_KEY: 'S3RVER',
      S3_SECRET_KEY: 'S3RVER',
      S3_BUCKET: `claims-${randomBytes(3).toString('hex')}`,
    };
    ctx = await createTestContext({ REDIS_URL: redisUrl, QUEUE_PREFIX: prefix, ...storage });
    const schema = (await ctx.deps.db.query<{ s: string }>('SELECT current_schema() AS s'))[0]!.s;
    env = {
      DATABASE_URL: process.env.TEST_DATABASE_URL!,
      DB_SEARCH_PATH: schema,
      DB_POOL_SIZE: '4',
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: prefix,
      DOCUMENT_HASH_KEY: TEST_HASH_KEY,
      DATA_DIR: ctx.config.dataDir,
      IMPORT_CHUNK_SIZE: '1000',
      LOG_LEVEL: 'warn',
      ...storage,
    };
    const started = await Promise.all(
      [0, 1].map(async () => {
        const port = await freePort();
        const api = startScript('start', {
          ...env,
          LOG_LEVEL: 'info',
          HOST: '127.0.0.1',
          PORT: String(port),
          SESSION_SECRET: 'test-session-secret-0123456789abcdef0123',
        });
        await printed(api, 'claims registry ready');
        return `http://127.0.0.1:${port}`;
      }),
    );
    apis = started;
    queue = new Queue(IMPORT_QUEUE, { connection: { url: redisUrl }, prefix });
  }, 120_000);

  afterAll(async () => {
    await killAll();
    await queue?.close();
    await ctx?.close();
    await removeQueueKeys(redisUrl, prefix);
    await s3?.close();
    if (s3Dir) fs.rmSync(s3Dir, { recursive: true, force: true });
  });

  async function startWorkers() {
    workers = [0, 1].map(() => startScript('worker', { ...env, LOG_LEVEL: 'info', WORKER_CONCURRENCY: String(WORKER_CONCURRENCY) }));
    await Promise.all(workers.map((w) => printed(w, 'import worker ready')));
  }

  /** POSTs a file to one of the APIs and answers at once (202) with the import's id. */
  async function upload(api: string, company: Company, text: string): Promise<string> {
    const body = await multipart(text);
    const res = await fetch(`${api}/api/v1/claims/import`, {
      method: 'POST',
      headers: { ...company.auth, 'content-type': body.contentType, prefer: 'respond-async' },
      body: body.payload,
    });
    const answer = (await res.json()) as { data: { id: string } };
    expect(res.status, JSON.stringify(answer)).toBe(202);
    return answer.data.id;
  }

  const allFinished = (ids: string[]) =>
    until(
      `${ids.length} imports to finish`,
      async () => {
        const runs = await Promise.all(ids.map((id) => ctx.deps.repos.imports.findById(id)));
        return runs.every((r) => r && ['completed', 'failed', 'cancelled'].includes(r.status)) ? runs.map((r) => r!) : undefined;
      },
      150_000,
    );

  async function storedKeys(companyId: string): Promise<string[]> {
    const rows = await ctx.deps.db.query<{ p: string; d: string; t: string | null; a: string | null; s: string }>(
      'SELECT vehicle_registration AS p, claim_date AS d, claim_type AS t, amount::text AS a, status AS s FROM claims WHERE company_id = $1',
      [companyId],
    );
    return rows.map((r) => keyOf(r.p, r.d, r.t ?? '', r.a ?? '', r.s)).sort();
  }

  it('imports 20 companies’ files uploaded at once: each completes with exactly its rows, none retried after a deadlock', async () => {
    await startWorkers();
    // Groups of four companies upload the same persons (the same seed): their imports create and
    // find the same clients and documents at the same time.
    const files = await Promise.all(Array.from({ length: 5 }, (_, i) => claimsFile(ROWS, 500 + i)));
    const companies = await Promise.all(Array.from({ length: 20 }, (_, i) => ctx.newCompany(`Many ${i}`)));
    const ids = await Promise.all(companies.map((c, i) => upload(apis[i % 2]!, c, files[i % 5]!.text)));

    const runs = await allFinished(ids);
    for (const [i, run] of runs.entries()) {
      const file = files[i % 5]!;
      expect(run, `company ${i}`).toMatchObject({
        status: 'completed',
        attempts: 1,
        rowsDone: ROWS,
        imported: ROWS - file.stats.invalidRows,
        failed: file.stats.invalidRows,
      });
      // Exactly the valid rows, each once, under the right company.
      expect(await storedKeys(companies[i]!.id), `company ${i}`).toEqual(file.expectedKeys(run.errors!.map((e) => e.row)));
    }
    for (const w of workers) expect(w.output()).not.toMatch(/deadlock|serializ|40P01|40001/iu);
  }, 180_000);

  it('takes one company’s file before another company’s backlog: 19 files of A queued, then 1 of B; B’s completes before A’s last', async () => {
    // Stopped: the 20 files are all queued before any is taken, so the order is the queue's alone.
    await Promise.all(workers.map((w) => kill(w, 'SIGTERM')));
    const file = await claimsFile(FAIR_ROWS, 600);
    const [a, b] = [await ctx.newCompany('Backlog A'), await ctx.newCompany('Single B')];
    const aIds: string[] = [];
    for (let i = 0; i < 19; i++) aIds.push(await upload(apis[i % 2]!, a, file.text));
    const bId = await upload(apis[1]!, b, file.text);

    // Each file's priority is its rank among its company's unfinished imports.
    const priority = async (id: string) => (await queue.getJob(importJobId(id)))!.priority;
    expect(await Promise.all(aIds.map(priority))).toEqual(Array.from({ length: 19 }, (_, i) => i + 1));
    expect(await priority(bId)).toBe(1);

    await startWorkers();
    const runs = await allFinished([...aIds, bId]);
    for (const run of runs) expect(run).toMatchObject({ status: 'completed', imported: FAIR_ROWS - file.stats.invalidRows });
    // History times have milliseconds (finished_at has seconds).
    const at = (run: (typeof runs)[number], status: string) => run.history.find((h) => h.status === status)!.at;
    const startOf = (run: (typeof runs)[number]) => at(run, 'processing');
    const aRuns = runs.slice(0, 19);
    const bRun = runs[19]!;
    // B's job is the second one taken (after A's first): it starts with the first ones, whichever
    // of the four slots (two workers × WORKER_CONCURRENCY) writes its start first. In upload order
    // it would have started after all 19 of A's.
    expect(aRuns.filter((r) => startOf(r) < startOf(bRun)).length).toBeLessThan(2 * WORKER_CONCURRENCY);
    const lastOfA = aRuns
      .map((r) => at(r, 'completed'))
      .sort()
      .at(-1)!;
    expect(at(bRun, 'completed') < lastOfA, `B completed at ${at(bRun, 'completed')}, A's last at ${lastOfA}`).toBe(true);
  }, 180_000);
});
