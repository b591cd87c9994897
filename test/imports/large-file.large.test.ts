import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { PassThrough, Readable } from 'node:stream';
import { createGzip } from 'node:zlib';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { generateCsv } from '../../scripts/gen-csv';
import { createTestContext, TEST_HASH_KEY, type TestContext } from '../harness';
import { freePort, killAll, printed, removeQueueKeys, startScript, type Child } from '../processes';

/**
 * A very large file through the queue, as in production (issue 56): `npm start` receives it into
 * local storage and `npm run worker` imports it. The file, 2,000,000 rows (about 200 MB), is
 * generated while it is sent (scripts/gen-csv.ts), never stored by the test. The import holds
 * every row exactly once; the API's memory stays flat while it receives (its peak resident memory,
 * VmHWM of /proc/<pid>/status, at most API_PEAK_MB); the worker's peak stays within WORKER_PEAK_MB;
 * and the worker imports the large file at least MIN_PACE_OF_SMALL_FILE times as fast (rows a
 * second, as the import's answer gives them) as a 9 MB file imported before it, sent
 * gzip-compressed (`Content-Encoding: gzip`) through the same API. The figures, and where the
 * large import's time went, are printed (docs/performance.md has them).
 */
const redisUrl = process.env.TEST_REDIS_URL!;
const prefix = `test-large-${randomBytes(4).toString('hex')}`;
const LARGE_ROWS = 2_000_000;
const SMALL_ROWS = 92_000;
const API_PEAK_MB = 300;
const WORKER_PEAK_MB = 200;
const MIN_PACE_OF_SMALL_FILE = 0.6;

/** VmHWM of a process, in MB. */
function peakMb(pid: number | undefined): number {
  const m = /^VmHWM:\s+(\d+) kB/mu.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmHWM for process ${pid}`);
  return Math.round(Number(m[1]) / 1024);
}

/** A generated claims file of `rows` valid rows, as a stream of bytes produced while it is read. */
function generated(rows: number): { stream: Readable; stats: Promise<{ rows: number; invalidRows: number }> } {
  const out = new PassThrough({ highWaterMark: 1024 * 1024 });
  const stats = generateCsv({ rows, repeat: 0.3, invalid: 0, delimiter: ',' }, (chunk) =>
    out.write(chunk) ? undefined : new Promise<void>((resolve) => out.once('drain', () => resolve())),
  ).then(
    (s) => {
      out.end();
      return s;
    },
    (err: unknown) => {
      out.destroy(err as Error);
      throw err;
    },
  );
  return { stream: out, stats };
}

describe('a 200 MB file through the API and a worker', () => {
  let ctx: TestContext;
  let api: Child;
  let worker: Child;
  let base: string;

  beforeAll(async () => {
    ctx = await createTestContext({ REDIS_URL: redisUrl, QUEUE_PREFIX: prefix });
    const schema = (await ctx.deps.db.query<{ s: string }>('SELECT current_schema() AS s'))[0]!.s;
    const env = {
      DATABASE_URL: process.env.TEST_DATABASE_URL!,
      DB_SEARCH_PATH: schema,
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: prefix,
      DOCUMENT_HASH_KEY: TEST_HASH_KEY,
      DATA_DIR: ctx.config.dataDir,
      LOG_LEVEL: 'info',
      IMPORT_MAX_BYTES: String(256 * 1024 * 1024),
      IMPORT_UPLOAD_TIMEOUT_SECONDS: '600',
    };
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    api = startScript('start', {
      ...env,
      HOST: '127.0.0.1',
      PORT: String(port),
      SESSION_SECRET: 'test-session-secret-0123456789abcdef0123',
    });
    worker = startScript('worker', { ...env, WORKER_CONCURRENCY: '1' });
    await Promise.all([printed(api, 'claims registry ready'), printed(worker, 'import worker ready')]);
  }, 120_000);

  afterAll(async () => {
    await killAll();
    await ctx?.close();
    await removeQueueKeys(redisUrl, prefix);
  });

  /** Sends `file` as the multipart `file` part, streamed (gzip-compressed as a whole with `gzip`); the import's id once accepted (202). */
  async function upload(auth: Record<string, string>, file: Readable, gzip: boolean): Promise<string> {
    const boundary = `large${randomBytes(8).toString('hex')}`;
    async function* form() {
      yield Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="large.csv"\r\nContent-Type: text/csv\r\n\r\n`,
      );
      for await (const chunk of file) yield chunk as Buffer;
      yield Buffer.from(`\r\n--${boundary}--\r\n`);
    }
    const body = gzip ? Readable.from(form()).pipe(createGzip({ level: 1 })) : Readable.from(form());
    const res = await fetch(`${base}/api/v1/claims/import`, {
      method: 'POST',
      headers: {
        ...auth,
        'content-type': `multipart/form-data; boundary=${boundary}`,
        prefer: 'respond-async',
        ...(gzip ? { 'content-encoding': 'gzip' } : {}),
      },
      body: Readable.toWeb(body),
      duplex: 'half',
    });
    const answer = (await res.json()) as { data: { id: string } };
    expect(res.status, JSON.stringify(answer)).toBe(202);
    return answer.data.id;
  }

  type Answer = { status: string; imported: number | null; failed: number | null; progress: { rows_per_second: number | null } };
  /** The import's answer (GET /api/v1/imports/{id}) once it has finished, asked once a second. */
  async function finished(auth: Record<string, string>, id: string): Promise<Answer> {
    const until = Date.now() + 300_000;
    for (;;) {
      const res = await fetch(`${base}/api/v1/imports/${id}`, { headers: auth });
      const { data } = (await res.json()) as { data: Answer };
      if (['completed', 'failed', 'cancelled'].includes(data.status)) return data;
      if (Date.now() > until) throw new Error(`import ${id} did not finish: ${JSON.stringify(data)}`);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }

  /**
   * Where an import's time went, in seconds (the figures the test prints): from processing's
   * start to the first chunk's commit, each quarter of its chunks, and from the last chunk's
   * commit to the completion.
   */
  async function phases(id: string) {
    const rows = await ctx.deps.db.query<{ start: number; quarters: number[]; last: number; done: number }>(
      `WITH c AS (SELECT chunk_no, extract(epoch FROM committed_at) AS at FROM import_chunks WHERE import_id = $1),
            h AS (SELECT (e->>'status') AS status, extract(epoch FROM (e->>'at')::timestamptz) AS at
                    FROM imports, jsonb_array_elements(history) e WHERE id = $1)
       SELECT (SELECT min(at) FROM h WHERE status = 'processing')::float8 AS start,
              ARRAY(SELECT percentile_disc(q) WITHIN GROUP (ORDER BY at)::float8 FROM c, unnest(ARRAY[0, 0.25, 0.5, 0.75, 1]) q GROUP BY q ORDER BY q) AS quarters,
              (SELECT max(at) FROM c)::float8 AS last,
              (SELECT max(at) FROM h WHERE status = 'completed')::float8 AS done`,
      [id],
    );
    const { start, quarters, last, done } = rows[0]!;
    const round = (s: number) => Math.round(s * 10) / 10;
    return {
      firstChunk: round(quarters[0]! - start),
      quarters: quarters.slice(1).map((q, i) => round(q - quarters[i]!)),
      completion: round(done - last),
      total: round(done - start),
    };
  }

  it('imports every row once, with the API and the worker within their memory and the pace of a small file', async () => {
    const company = await ctx.newCompany('Large file');

    const small = generated(SMALL_ROWS);
    const smallRun = await finished(company.auth, await upload(company.auth, small.stream, true));
    expect(smallRun).toMatchObject({ status: 'completed', imported: (await small.stats).rows, failed: 0 });

    const large = generated(LARGE_ROWS);
    const largeId = await upload(company.auth, large.stream, false);
    const apiPeak = peakMb(api.pid);
    const largeRun = await finished(company.auth, largeId);
    const workerPeak = peakMb(worker.pid);
    expect((await large.stats).rows).toBe(LARGE_ROWS);
    expect(largeRun).toMatchObject({ status: 'completed', imported: LARGE_ROWS, failed: 0 });
    const stored = await ctx.deps.db.query<{ n: number }>('SELECT count(*)::int AS n FROM claims WHERE company_id = $1', [company.id]);
    expect(stored[0]!.n).toBe(LARGE_ROWS + SMALL_ROWS);

    const pace = { small: smallRun.progress.rows_per_second!, large: largeRun.progress.rows_per_second! };
    console.info(
      `large file: API peak ${apiPeak} MB, worker peak ${workerPeak} MB; rows a second ${JSON.stringify(pace)}; ` +
        `phases (s) ${JSON.stringify(await phases(largeId))}`,
    );
    expect(apiPeak).toBeLessThanOrEqual(API_PEAK_MB);
    expect(workerPeak).toBeLessThanOrEqual(WORKER_PEAK_MB);
    expect(pace.large).toBeGreaterThanOrEqual(MIN_PACE_OF_SMALL_FILE * pace.small);
  }, 420_000);
});
