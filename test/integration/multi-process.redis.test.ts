import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { enqueueWebhookEvent } from '../../src/domain/webhooks/webhook-service';
import { claimBody, createTestContext, TEST_HASH_KEY, type TestContext } from '../harness';
import { csv, multipart, validRow } from '../import-helpers';
import { answering, freePort, kill, printed, removeQueueKeys, startScript, until, type Child } from '../processes';
import { companyWithPeople, httpApp, PASSWORD, WebClient } from '../web/web-client';

/**
 * Several processes, proven together: two API servers (`npm start`) and two workers
 * (`npm run worker`) on one PostgreSQL, one Redis and one S3-compatible store (s3rver), as a
 * deployment runs them. What must hold whatever the number of processes: a revoked token is
 * refused everywhere within a second, each look-up is logged once, the retention purge runs once
 * a day, no webhook is delivered twice, imports sent to either server are run by either worker,
 * and each process's metrics say which process they count.
 */
const redisUrl = process.env.TEST_REDIS_URL!;

type S3rverInstance = { run(): Promise<{ port: number }>; close(): Promise<void> };
const S3rver = createRequire(import.meta.url)('s3rver') as new (opts: Record<string, unknown>) => S3rverInstance;

type Proc = { name: string; child: Child; metricsUrl: string; base: string };

/** The pino lines a process printed (JSON, one a line), parsed. */
const logLines = (p: Proc) =>
  p.child
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg: string; jobId?: string; [k: string]: unknown });

/** Every sample line of a Prometheus text, with its labels. */
function samples(text: string) {
  return text
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((line) => {
      const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/u.exec(line);
      if (!m) throw new Error(`not a sample: ${line}`);
      const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/gu)].map((l) => [l[1]!, l[2]!]));
      return { name: m[1]!, labels, value: Number(m[3]) };
    });
}
const sampleValue = (text: string, name: string, labels: Record<string, string>) =>
  samples(text).find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;

describe('two API processes and two workers on one PostgreSQL, Redis and S3 store', () => {
  const prefix = `test-multi-${randomBytes(4).toString('hex')}`;
  const bucket = `claims-multi-${randomBytes(3).toString('hex')}`;
  let s3: S3rverInstance;
  let s3Dir: string;
  let ctx: TestContext;
  let apis: [Proc, Proc];
  let workers: [Proc, Proc];
  let startedAt: number;
  const all = () => [...apis, ...workers];

  beforeAll(async () => {
    startedAt = Date.now();
    s3Dir = fs.mkdtempSync(path.join(os.tmpdir(), 's3rver-'));
    s3 = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: s3Dir });
    const { port: s3Port } = await s3.run();
    const shared = {
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: prefix,
      S3_ENDPOINT: `http://127.0.0.1:${s3Port}`,
      S3_ACCESS_KEY: 'S3RVER',
      S3_SECRET_KEY: 'S3RVER',
      S3_BUCKET: bucket,
      WEBHOOK_ALLOW_PRIVATE: 'true',
    };
    // The test's own service (companies, tokens, endpoints, reading the database) runs nothing
    // in the background: with REDIS_URL, imports and webhooks are the workers' alone.
    ctx = await createTestContext(shared);
    const schema = (await ctx.deps.db.query<{ s: string }>('SELECT current_schema() AS s'))[0]!.s;
    const env = {
      ...shared,
      DATABASE_URL: process.env.TEST_DATABASE_URL!,
      DB_SEARCH_PATH: schema,
      DB_POOL_SIZE: '4',
      DOCUMENT_HASH_KEY: TEST_HASH_KEY,
      SESSION_SECRET: 'test-session-secret-0123456789abcdef0123',
      DATA_DIR: ctx.config.dataDir,
      HOST: '127.0.0.1',
      // One import at a time per worker: two imports running at once are on two workers.
      WORKER_CONCURRENCY: '1',
      // Long enough that no delivery held by the receiver below times out and is sent again.
      WEBHOOK_TIMEOUT_SECONDS: '30',
    };
    const start = async (name: string, script: 'start' | 'worker', processName?: string): Promise<Proc> => {
      const port = await freePort();
      const metricsPort = await freePort();
      const child = startScript(script, {
        ...env,
        ...(processName ? { PROCESS_NAME: processName } : {}),
        ...(script === 'start'
          ? { PORT: String(port), METRICS_PORT: String(metricsPort), LOG_LEVEL: 'warn' }
          : // debug: the retention schedule says when a purge was not due.
            { WORKER_METRICS_PORT: String(metricsPort), LOG_LEVEL: 'debug' }),
      });
      return { name, child, base: `http://127.0.0.1:${port}`, metricsUrl: `http://127.0.0.1:${metricsPort}/metrics` };
    };
    // The workers first and together: their retention schedules ask at the same moment (a minute after start).
    workers = await Promise.all([start('worker 1', 'worker', 'worker-1'), start('worker 2', 'worker')]);
    apis = await Promise.all([start('api 1', 'start', 'api-1'), start('api 2', 'start')]);
    await Promise.all([...workers.map((w) => printed(w.child, 'import worker ready')), ...apis.map((a) => answering(a.child, a.base))]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([...(apis ?? []), ...(workers ?? [])].map((p) => kill(p.child, 'SIGTERM')));
    await ctx?.close();
    await removeQueueKeys(redisUrl, prefix);
    await s3?.close();
    if (s3Dir) fs.rmSync(s3Dir, { recursive: true, force: true });
  }, 60_000);

  const api = (p: Proc, token: string, url: string, init: { method?: string; body?: unknown } = {}) =>
    fetch(p.base + url, {
      method: init.method ?? 'GET',
      headers: {
        authorization: `Bearer ${token}`,
        accept: 'application/json',
        ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    });

  it('a token revoked through one API process is refused by the other within a second', async () => {
    const [a, b] = apis;
    const company = await companyWithPeople(ctx, 'Multi revocation');
    const status = (p: Proc) => api(p, company.token, '/api/v1/claims').then((r) => r.status);
    // Both servers verify the token and keep it in memory.
    for (let i = 0; i < 3; i++) {
      expect(await status(a)).toBe(200);
      expect(await status(b)).toBe(200);
    }
    const web = new WebClient(httpApp(a.base));
    await web.signIn(company.admin.email, PASSWORD);
    const [row] = (await ctx.deps.tokens.list(company.id)).filter((t) => t.name === 'test token');
    await web.get(`/settings/tokens/${row!.id}/revoke`);
    expect((await web.post(`/settings/tokens/${row!.id}/revoke`)).statusCode).toBe(303);
    const revokedAt = Date.now();
    expect(await status(a)).toBe(401);

    // The other server, asked every 20 ms: its first 401 comes before the one-second deadline,
    // and nothing but 401 after it.
    const seen: { sentAt: number; status: number }[] = [];
    for (;;) {
      const sentAt = Date.now();
      seen.push({ sentAt, status: await status(b) });
      if (sentAt >= revokedAt + 1000) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const first401 = seen.findIndex((s) => s.status === 401);
    expect(first401, JSON.stringify(seen)).toBeGreaterThanOrEqual(0);
    expect(seen[first401]!.sentAt, JSON.stringify(seen)).toBeLessThan(revokedAt + 1000);
    expect(
      seen.slice(first401).every((s) => s.status === 401),
      JSON.stringify(seen),
    ).toBe(true);
  }, 30_000);

  it('logs each look-up exactly once, whichever API process answered it', async () => {
    const [a, b] = apis;
    const owner = await ctx.newCompany('Multi owner');
    const looker = await ctx.newCompany('Multi looker');
    const claim = await api(a, owner.token, '/api/v1/claims', { method: 'POST', body: claimBody() });
    expect(claim.status).toBe(201);
    const plate = ((await claim.json()) as { data: { vehicle_registration: string } }).data.vehicle_registration;

    // Eight searches at once on each server, each with its own purpose.
    const purposes = ['a', 'b'].flatMap((p) => Array.from({ length: 8 }, (_, i) => `${p}-${i}`));
    const answers = await Promise.all(
      purposes.map(async (purpose) => {
        const res = await api(purpose.startsWith('a') ? a : b, looker.token, '/api/v1/claims/search-by-plate', {
          method: 'POST',
          body: { vehicle_registration: plate, purpose },
        });
        return { status: res.status, body: (await res.json()) as { meta: { total_claims: number } } };
      }),
    );
    for (const r of answers) expect(r).toMatchObject({ status: 200, body: { meta: { total_claims: 1 } } });

    // The look-up log, as either server lists it: each search once.
    for (const p of apis) {
      const res = await api(p, looker.token, '/api/v1/lookups?limit=100');
      const listed = ((await res.json()) as { data: { kind: string; purpose: string }[] }).data;
      expect(listed.map((l) => l.purpose).sort()).toEqual([...purposes].sort());
      expect(new Set(listed.map((l) => l.kind))).toEqual(new Set(['plate_search']));
    }
    const stored = await ctx.deps.db.query<{ purpose: string; n: number }>(
      'SELECT purpose, count(*)::int AS n FROM lookups WHERE company_id = $1 GROUP BY purpose',
      [looker.id],
    );
    expect(stored.map((r) => r.purpose).sort()).toEqual([...purposes].sort());
    expect(stored.every((r) => r.n === 1)).toBe(true);
  }, 30_000);

  it('delivers each webhook once while both workers deliver', async () => {
    const company = await ctx.newCompany('Multi hooks');
    // The receiver holds every answer until 11 requests wait at once. One deliverer sends at most
    // 10 at a time (and waits for them), so 11 waiting means both workers are delivering. Later
    // answers take 300 ms: deliveries stay in flight while the other worker looks for due ones.
    const received: { delivery: string; event: string }[] = [];
    const held: http.ServerResponse[] = [];
    const receiver = http.createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (d: string) => (body += d));
      req.on('end', () => {
        received.push({ delivery: String(req.headers['claims-delivery']), event: (JSON.parse(body) as { id: string }).id });
        if (received.length < 11) held.push(res);
        else if (held.length > 0) for (const r of [...held.splice(0), res]) r.writeHead(200).end('ok');
        else setTimeout(() => res.writeHead(200).end('ok'), 300);
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      await ctx.deps.webhooks.createEndpoint(company.id, `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`);
      const events = 25;
      await ctx.deps.repos.transaction(async (tx) => {
        for (let i = 0; i < events; i++)
          await enqueueWebhookEvent(tx, { companyId: company.id, type: 'import.completed', payload: { id: `import-${i}` } });
      });
      await until('every delivery to be settled', async () => {
        const list = await ctx.deps.webhooks.listDeliveries(company.id);
        return list.length === events && list.every((d) => d.status !== 'pending') && list;
      });
      const deliveries = await ctx.deps.webhooks.listDeliveries(company.id);
      expect(deliveries.map((d) => ({ status: d.status, attempts: d.attempts }))).toEqual(
        Array.from({ length: events }, () => ({ status: 'delivered', attempts: 1 })),
      );
      expect(received).toHaveLength(events);
      expect(new Set(received.map((r) => r.delivery)).size).toBe(events);
      expect(new Set(received.map((r) => r.event)).size).toBe(events);

      // Each worker's own metrics count what it delivered: both delivered, together each one once.
      const delivered = await Promise.all(
        workers.map(async (w) =>
          sampleValue(await (await fetch(w.metricsUrl)).text(), 'claims_webhook_deliveries_total', { outcome: 'delivered' }),
        ),
      );
      expect(
        delivered.every((n) => n !== undefined && n > 0),
        JSON.stringify(delivered),
      ).toBe(true);
      expect(delivered.reduce((s, n) => s! + n!, 0)).toBe(events);
    } finally {
      receiver.closeAllConnections();
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  }, 60_000);

  it('runs imports sent to either API process on either worker, each once, with exactly its rows', async () => {
    const company = await ctx.newCompany('Multi imports');
    // While the test holds the claims table, no import can write a claim: each worker is kept on
    // the first job it takes (one at a time), so the second job must be taken by the other worker.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let holding = false;
    const hold = ctx.deps.db.transaction(async (tx) => {
      await tx.query('LOCK TABLE claims IN SHARE MODE');
      holding = true;
      await released;
    });
    try {
      await until('the claims table to be held', () => holding);
      const sizes = [2, 3, 4, 5, 6, 7];
      const ids = await Promise.all(
        sizes.map(async (valid, i) => {
          const rows = [...Array.from({ length: valid }, () => validRow()), validRow({ id_type: 'x' })];
          const body = await multipart(csv(rows));
          const res = await fetch(`${apis[i % 2]!.base}/api/v1/claims/import`, {
            method: 'POST',
            headers: { authorization: `Bearer ${company.token}`, 'content-type': body.contentType, prefer: 'respond-async' },
            body: body.payload,
          });
          expect(res.status, await res.clone().text()).toBe(202);
          return ((await res.json()) as { data: { id: string } }).data.id;
        }),
      );
      const started = (w: Proc) => logLines(w).filter((l) => l.msg === 'import job started');
      await until('both workers to have started an import', () => workers.every((w) => started(w).length > 0));
      // The hold worked: nothing was imported while the table was held.
      const early = await ctx.deps.db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM imports WHERE company_id = $1 AND status NOT IN ('queued', 'processing')",
        [company.id],
      );
      expect(early[0]!.n).toBe(0);
      release();
      await hold;

      // Every import completes with exactly its rows, as either server tells it.
      for (const [i, id] of ids.entries()) {
        const done = await until(`import ${id} to finish`, async () => {
          const res = await api(apis[(i + 1) % 2]!, company.token, `/api/v1/imports/${id}`);
          const data = ((await res.json()) as { data: { status: string } }).data;
          return data.status !== 'queued' && data.status !== 'processing' && data;
        });
        expect(done).toMatchObject({ status: 'completed', imported: sizes[i], failed: 1 });
        const stored = await ctx.deps.db.query<{ n: number }>('SELECT count(*)::int AS n FROM claims WHERE import_id = $1', [id]);
        expect(stored[0]!.n).toBe(sizes[i]);
      }
      // Each job was started once, by one worker, and both workers took some.
      const byWorker = workers.map((w) => started(w).map((l) => l.jobId));
      expect(byWorker.flat().sort()).toEqual(ids.map((id) => `import-${id}`).sort());
      expect(byWorker.every((jobs) => jobs.length > 0)).toBe(true);
      // Each worker's metrics count the rows it imported: together, every row once. A worker counts
      // an import's rows once its job has returned, just after the import shows completed.
      const expected = sizes.reduce((s, n) => s + n + 1, 0);
      let counted = 0;
      await until(
        `the workers' metrics to count ${expected} rows`,
        async () => {
          const rows = await Promise.all(
            workers.map(async (w) => sampleValue(await (await fetch(w.metricsUrl)).text(), 'claims_import_rows_processed_total', {}) ?? 0),
          );
          counted = rows.reduce((s, n) => s + n, 0);
          return counted >= expected;
        },
        10_000,
      );
      expect(counted).toBe(expected);
    } finally {
      release();
      await hold.catch(() => undefined);
    }
  }, 60_000);

  it("serves each process's own metrics, labelled with the process (PROCESS_NAME, or host and pid)", async () => {
    const texts = await Promise.all(all().map(async (p) => (await fetch(p.metricsUrl)).text()));
    // PROCESS_NAME where set (api 1, worker 1), else the host and the process id.
    const expected = ['api-1', `${os.hostname()}:${apis[1].child.pid}`, 'worker-1', `${os.hostname()}:${workers[1].child.pid}`];
    texts.forEach((text, i) => {
      expect(new Set(samples(text).map((s) => s.labels.process)), all()[i]!.name).toEqual(new Set([expected[i]]));
    });
    // The look-up test's searches: eight on each server, each counted by its own.
    for (const [i, text] of texts.slice(0, 2).entries()) {
      expect(
        sampleValue(text, 'http_requests_total', { method: 'POST', route: '/api/v1/claims/search-by-plate', status: '200' }),
        apis[i]!.name,
      ).toBe(8);
    }
    // Workers answer no HTTP requests of the API.
    for (const text of texts.slice(2)) expect(samples(text).some((s) => s.name === 'http_requests_total' && s.value > 0)).toBe(false);
  });

  it('runs the retention purge once for the day, whichever worker asks first', async () => {
    // Each worker asks a minute after its start; the APIs (with REDIS_URL) leave it to the workers.
    const purge = (w: Proc) => logLines(w).filter((l) => /^retention purge (done|not due)/u.test(l.msg));
    await until('both workers to have asked for the retention purge', () => workers.every((w) => purge(w).length > 0), 80_000);
    const runs = workers.flatMap((w) => purge(w).filter((l) => l.msg === 'retention purge done'));
    expect(runs, JSON.stringify(workers.map(purge))).toHaveLength(1);
    const [last] = await ctx.deps.db.query<{ value: string }>(`SELECT value FROM app_meta WHERE key = 'retention_last_run'`);
    // The day's run is recorded (the first in this database: none was due before).
    expect(Date.parse(last!.value)).toBeGreaterThanOrEqual(Math.floor(startedAt / 1000) * 1000);
  }, 90_000);
});
