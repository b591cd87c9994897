import fs from 'node:fs';
import path from 'node:path';

import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { generateCsv } from '../../scripts/gen-csv';
import { claimBody, createTestContext, TEST_HASH_KEY, type TestContext } from '../harness';
import { multipart } from '../import-helpers';
import { freePort, kill, killAll, removeQueueKeys, startScript, until, type Child } from '../processes';

/**
 * The PostgreSQL primary dies and pg_auto_failover promotes its synchronous standby, while an API
 * process takes a steady stream of submissions and a worker runs a 9 MB import, both on the
 * formation's multi-host URI (target_session_attrs=read-write). Needs the formation of
 * scripts/start-failover.sh: runs only with TEST_FAILOVER=1 (vitest.config.ts), alone (.ci/run),
 * since it kills that formation's primary.
 *
 *   TEST_FAILOVER_DATABASE_URL   the formation's URI (start-failover.sh's DATABASE_URL line)
 *   TEST_FAILOVER_MONITOR_URL    its monitor (MONITOR_URL)
 *   TEST_FAILOVER_DIR            its folder (FAILOVER_DIR, default /tmp/claims-failover)
 */
const formationUrl = process.env.TEST_FAILOVER_DATABASE_URL;
const monitorUrl = process.env.TEST_FAILOVER_MONITOR_URL;
const failoverDir = process.env.TEST_FAILOVER_DIR ?? '/tmp/claims-failover';
const redisUrl = process.env.TEST_REDIS_URL!;

const ROWS = 87_000;
/** The bound: writes are accepted again within this long after the promotion. */
const BACK_WITHIN_MS = 30_000;

type Answer = { at: number; status: number | 'refused'; retryAfter: string | null; code?: string; id?: string };

/** Reads the process group of a process (field 5 of /proc/<pid>/stat). */
const t0 = Date.now();
/** Progress on the console: this test takes minutes. */
const step = (what: string) => console.log(`failover test, ${((Date.now() - t0) / 1000).toFixed(1)} s: ${what}`);

const processGroup = (pid: number) => Number(fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[2]);

describe('the PostgreSQL primary killed under load, pg_auto_failover promoting the standby', () => {
  const prefix = `test-failover-${Date.now().toString(36)}`;
  let ctx: TestContext;
  let monitor: postgres.Sql;
  let api: { child: Child; base: string };
  let worker: Child;
  let file: Buffer;
  let expected: { rows: number; invalidRows: number };
  let schema: string;

  beforeAll(async () => {
    if (!formationUrl || !monitorUrl)
      throw new Error('TEST_FAILOVER_DATABASE_URL and TEST_FAILOVER_MONITOR_URL are needed: scripts/start-failover.sh');
    // The test's own service (companies, tokens, reading the database) on the formation too.
    process.env.TEST_DATABASE_URL = formationUrl;
    ctx = await createTestContext({ REDIS_URL: redisUrl, QUEUE_PREFIX: prefix, IMPORT_MAX_BYTES: String(20 * 1024 * 1024) });
    step('the test context is ready');
    monitor = postgres(monitorUrl, { max: 1, onnotice: () => {} });
    schema = (await ctx.deps.db.query<{ s: string }>('SELECT current_schema() AS s'))[0]!.s;
    const out: string[] = [];
    expected = await generateCsv({ rows: ROWS, repeat: 0.3, invalid: 0.05, delimiter: ',', seed: 55 }, (chunk) => void out.push(chunk));
    file = Buffer.from(out.join(''));
    step(`the file is ready (${file.length} bytes)`);
    const env = {
      DATABASE_URL: formationUrl,
      DB_SEARCH_PATH: schema,
      DB_POOL_SIZE: '4',
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: prefix,
      DOCUMENT_HASH_KEY: TEST_HASH_KEY,
      SESSION_SECRET: 'test-session-secret-0123456789abcdef0123',
      DATA_DIR: ctx.config.dataDir,
      HOST: '127.0.0.1',
      IMPORT_MAX_BYTES: String(20 * 1024 * 1024),
      WORKER_CONCURRENCY: '1',
      LOG_LEVEL: 'warn',
    };
    const port = await freePort();
    api = {
      child: startScript('start', { ...env, PORT: String(port), METRICS_PORT: String(await freePort()) }),
      base: `http://127.0.0.1:${port}`,
    };
    worker = startScript('worker', { ...env, WORKER_METRICS_PORT: String(await freePort()), LOG_LEVEL: 'info' });
    await Promise.all([
      until('the worker to be ready', () => worker.output().includes('import worker ready'), 240_000),
      // As processes.ts's `answering`, with more time: the API process migrates the formation's new schema.
      until(
        'the API to answer',
        () => {
          if (api.child.exitCode !== null) throw new Error(`the API process exited: ${api.child.output().slice(-2000)}`);
          return fetch(`${api.base}/readyz`).then(
            (r) => r.ok,
            () => false,
          );
        },
        240_000,
      ),
    ]);
  }, 300_000);

  afterAll(async () => {
    await killAll();
    await monitor?.end({ timeout: 5 });
    await ctx?.close();
    await removeQueueKeys(redisUrl, prefix);
  }, 60_000);

  /** The node pg_auto_failover has as primary now (its name, port and folder). */
  async function primaryNode() {
    const [node] = await monitor<{ nodename: string; nodeport: number }[]>`
      SELECT nodename, nodeport FROM pgautofailover.node WHERE reportedstate IN ('primary', 'wait_primary', 'single')`;
    if (!node) throw new Error('the formation has no primary');
    return { name: node.nodename, port: node.nodeport, dir: path.join(failoverDir, node.nodename) };
  }

  /** Kills a node as a dying machine would: its pg_auto_failover keeper and its postmaster, with SIGKILL. */
  function killNode(dir: string, name: string) {
    const keeper = Number(
      fs.readFileSync(path.join(failoverDir, 'run', 'pg_autoctl', failoverDir, name, 'pg_autoctl.pid'), 'utf8').split('\n')[0],
    );
    const postmaster = Number(fs.readFileSync(path.join(dir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    process.kill(-processGroup(keeper), 'SIGKILL');
    try {
      process.kill(postmaster, 'SIGKILL');
    } catch {
      // Gone with the keeper's process group already.
    }
  }

  it('answers 201, or 503 with Retry-After, throughout; writes again within 30 s of the promotion; loses no claim answered 201; finishes the import exactly', async () => {
    const company = await ctx.newCompany('Failover');
    const headers = { authorization: `Bearer ${company.token}`, accept: 'application/json' };
    const answers: Answer[] = [];
    let submitting = true;
    const submitter = async () => {
      while (submitting) {
        const at = Date.now();
        try {
          const res = await fetch(`${api.base}/api/v1/claims`, {
            method: 'POST',
            headers: { ...headers, 'content-type': 'application/json' },
            body: JSON.stringify(claimBody()),
          });
          const body = (await res.json()) as { data?: { id: string }; code?: string };
          answers.push({
            at,
            status: res.status,
            retryAfter: res.headers.get('retry-after'),
            ...(body.code ? { code: body.code } : {}),
            ...(body.data ? { id: body.data.id } : {}),
          });
          if (res.status !== 201) await new Promise((r) => setTimeout(r, 200));
        } catch (err) {
          const code = (err as { cause?: { code?: string } }).cause?.code;
          answers.push({ at, status: code === 'ECONNREFUSED' ? 'refused' : 0, retryAfter: null, ...(code ? { code } : {}) });
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    };
    const submitters = Array.from({ length: 4 }, () => submitter());

    const form = await multipart(file);
    const started = await fetch(`${api.base}/api/v1/claims/import`, {
      method: 'POST',
      headers: { ...headers, 'content-type': form.contentType, prefer: 'respond-async' },
      body: form.payload,
    });
    expect(started.status).toBe(202);
    const importId = ((await started.json()) as { data: { id: string } }).data.id;
    const importRow = () => ctx.deps.repos.imports.findById(importId).catch(() => undefined);
    await until('the import to be a quarter through', async () => ((await importRow())?.rowsDone ?? 0) >= ROWS / 4, 120_000);
    expect(answers.filter((a) => a.status === 201).length).toBeGreaterThan(0);

    step('the import is a quarter through');
    const old = await primaryNode();
    const apiPid = api.child.pid;
    const workerPid = worker.pid;
    killNode(old.dir, old.name);
    const killedAt = Date.now();
    step(`${old.name} killed`);

    // The promotion: the other node leaves recovery.
    const [standby] = await monitor<{ nodeport: number }[]>`SELECT nodeport FROM pgautofailover.node WHERE nodename <> ${old.name}`;
    const direct = postgres(formationUrl!.replace(/@[^/]+\//u, `@127.0.0.1:${standby!.nodeport}/`).replace(/\?.*$/u, ''), {
      max: 1,
      onnotice: () => {},
      connection: { search_path: schema },
    });
    const promotedAt = await until(
      'the standby to be promoted',
      async () => ((await direct`SELECT pg_is_in_recovery() AS r`.catch(() => [{ r: true }]))[0]!.r ? undefined : Date.now()),
      120_000,
    );
    step('the standby is promoted');
    const back = await until(
      'a submission answered 201 after the promotion',
      () => answers.find((a) => a.status === 201 && a.at >= promotedAt),
      BACK_WITHIN_MS + 10_000,
    );
    expect(back.at - promotedAt).toBeLessThanOrEqual(BACK_WITHIN_MS);
    // A while longer at full speed, then stop.
    await new Promise((r) => setTimeout(r, 3_000));
    submitting = false;
    await Promise.all(submitters);

    // Every answer: 201, or 503 service_unavailable with Retry-After (the API process never went away).
    const unexpected = answers.filter(
      (a) => !(a.status === 201 || (a.status === 503 && a.code === 'service_unavailable' && a.retryAfter !== null)),
    );
    expect(unexpected).toEqual([]);
    const duringGap = answers.filter((a) => a.at >= killedAt && a.at < promotedAt);
    console.log(
      `failover: promoted ${((promotedAt - killedAt) / 1000).toFixed(1)} s after the kill, writes back ${((back.at - promotedAt) / 1000).toFixed(1)} s after it; ` +
        `${answers.filter((a) => a.status === 201).length} answered 201, ${answers.filter((a) => a.status === 503).length} answered 503 ` +
        `(${duringGap.length} sent during the gap)`,
    );

    // Every claim answered 201 is on the new primary.
    const ids = answers.filter((a) => a.status === 201).map((a) => a.id!);
    const [{ n }] = (await direct`SELECT count(*)::int AS n FROM claims WHERE id = ANY(${ids}::uuid[])`) as unknown as [{ n: number }];
    expect(n).toBe(ids.length);

    step('submissions stopped');
    // The import goes on from its ledger and completes with the file's exact counts.
    const done = await until(
      'the import to finish',
      async () => {
        const run = await importRow();
        return run && run.status !== 'processing' && run.status !== 'queued' ? run : undefined;
      },
      240_000,
    );
    expect(done).toMatchObject({
      status: 'completed',
      rowsTotal: ROWS,
      rowsDone: ROWS,
      imported: expected.rows - expected.invalidRows,
      failed: expected.invalidRows,
    });
    const [{ stored }] = (await direct`SELECT count(*)::int AS stored FROM claims WHERE import_id = ${importId}`) as unknown as [
      { stored: number },
    ];
    expect(stored).toBe(expected.rows - expected.invalidRows);
    await direct.end({ timeout: 5 });

    // No process was restarted: the same API process and worker ran throughout, and still run.
    expect(api.child.pid).toBe(apiPid);
    expect(worker.pid).toBe(workerPid);
    expect(api.child.exitCode).toBeNull();
    expect(worker.exitCode).toBeNull();
    await kill(worker, 'SIGTERM');
  }, 420_000);
});
