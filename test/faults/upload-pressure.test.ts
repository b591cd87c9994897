import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';

import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, logSink, submitClaim, type Company, type TestContext } from '../harness';
import { csv, validRow } from '../import-helpers';
import { until } from '../processes';

/**
 * Upload pressure over real HTTP (the server listening on 127.0.0.1): 50 uploads of 10 MB at once
 * against MAX_CONCURRENT_UPLOADS 4 are each either taken (202, then imported exactly) or refused
 * at once with 503 `too_many_uploads` and Retry-After, none lost; a sender that trickles its body
 * is cut off with 408 after UPLOAD_MIN_RATE_WINDOW_SECONDS (1 s here, 30 s by default), logged at
 * warn once per address, while searches go on.
 */
const log = logSink<{ level: number; msg: string; client?: string }>();
const logger = pino({ level: 'info' }, log.stream);

let ctx: TestContext;
let base: { host: string; port: number };
let company: Company;
beforeAll(async () => {
  ctx = await createTestContext(
    {
      MAX_CONCURRENT_UPLOADS: '4',
      UPLOAD_MIN_BYTES_PER_SECOND: '10000',
      UPLOAD_MIN_RATE_WINDOW_SECONDS: '1',
      IMPORT_MAX_BYTES: '10485760',
    },
    { logger },
  );
  await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  base = { host: '127.0.0.1', port: (ctx.app.server.address() as net.AddressInfo).port };
  company = await ctx.newCompany('Pressure');
}, 120_000);
afterAll(async () => {
  // The clients' keep-alive connections (fetch, http.Agent) would hold the server's close.
  ctx?.app.server.closeAllConnections();
  await ctx?.close();
});

const BOUNDARY = 'pressure-boundary';
const head = Buffer.from(
  `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="claims.csv"\r\nContent-Type: text/csv\r\n\r\n`,
);
const tail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);

/** POSTs the file as a multipart upload streamed from disk; the status, Retry-After and body of the answer. */
function upload(
  file: string,
  size: number,
): Promise<{ status: number; retryAfter: string | undefined; body: { code?: string; data?: { id: string } } }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        ...base,
        method: 'POST',
        path: '/api/v1/claims/import',
        headers: {
          ...company.auth,
          prefer: 'respond-async',
          'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
          'content-length': String(head.length + size + tail.length),
        },
      },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, retryAfter: res.headers['retry-after'], body: JSON.parse(text) as never }));
      },
    );
    // An answer that comes before the whole body was sent ends the write early: not an error of the test.
    req.on('error', reject);
    req.write(head);
    const stream = fs.createReadStream(file);
    stream.on('end', () => req.end(tail));
    stream.pipe(req, { end: false });
  });
}

describe('upload pressure', () => {
  it('answers 50 uploads of 10 MB at once, with a limit of 4, each 202 (then imported exactly) or 503 with Retry-After at once: none lost', async () => {
    // 10 MB: ten valid rows, then blank lines (skipped, but read, checked and stored like any byte).
    const rows = Array.from({ length: 10 }, () => validRow());
    const text = csv(rows);
    const file = path.join(ctx.config.dataDir, 'pressure.csv');
    fs.mkdirSync(ctx.config.dataDir, { recursive: true });
    const size = 10 * 1024 * 1024 - 100;
    fs.writeFileSync(file, text + '\n'.repeat(size - Buffer.byteLength(text)));

    let peak = process.memoryUsage().rss;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    const answers = await Promise.all(Array.from({ length: 50 }, () => upload(file, size)));
    clearInterval(sampler);
    // The API's peak memory (this process holds the server, its database and the test): see docs/performance.md.
    console.info(
      `upload pressure: ${answers.filter((a) => a.status === 202).length} taken, peak RSS ${Math.round(peak / 1024 / 1024)} MB (server and test in one process)`,
    );

    const taken = answers.filter((a) => a.status === 202);
    const refused = answers.filter((a) => a.status === 503);
    expect(taken.length + refused.length).toBe(50);
    expect(taken.length).toBeGreaterThanOrEqual(4);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect(r.retryAfter).toBe('5');
      expect(r.body.code).toBe('too_many_uploads');
    }
    // Every upload taken is imported exactly: none lost.
    for (const a of taken) {
      const done = await until(
        `import ${a.body.data!.id} to finish`,
        async () => {
          const res = await ctx.app.inject({ method: 'GET', url: `/api/v1/imports/${a.body.data!.id}`, headers: company.auth });
          const data = res.json().data;
          return data.status === 'completed' || data.status === 'failed' ? data : undefined;
        },
        120_000,
      );
      expect(done).toMatchObject({ status: 'completed', imported: 10, failed: 0 });
    }
    fs.rmSync(file, { force: true });
    // Slots are given back: one more upload is taken.
    const small = path.join(ctx.config.dataDir, 'small.csv');
    fs.writeFileSync(small, csv([validRow()]));
    expect((await upload(small, fs.statSync(small).size)).status).toBe(202);
    fs.rmSync(small, { force: true });
  }, 300_000);

  it('cuts a slow sender off with 408 (logged at warn once per address a minute) while searches go on', async () => {
    const own = await submitClaim(ctx, company);
    const warnedBefore = log.records().filter((l) => l.level === 40 && l.msg === 'upload too slow: cut off').length;
    /** A sender of 10 bytes a second (it announces 1 MB), until the server answers or closes. */
    const trickle = () =>
      new Promise<{ answer: string; ms: number }>((resolve) => {
        const started = Date.now();
        const socket = net.connect(base.port, base.host);
        let answer = '';
        let timer: NodeJS.Timeout | undefined;
        socket.on('connect', () => {
          socket.write(
            `POST /api/v1/claims/import HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${company.auth.authorization}\r\n` +
              `Content-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: 1000000\r\n\r\n`,
          );
          socket.write(head);
          timer = setInterval(() => socket.write('first_name'), 1000);
        });
        socket.on('data', (d: Buffer) => (answer += d.toString()));
        socket.on('error', () => {});
        socket.on('close', () => {
          clearInterval(timer);
          resolve({ answer, ms: Date.now() - started });
        });
      });
    const senders = [trickle(), trickle()];
    // Searches meanwhile, answered as usual.
    let searching = true;
    const searches = (async () => {
      const times: number[] = [];
      while (searching) {
        const started = Date.now();
        const res = await fetch(`http://${base.host}:${base.port}/api/v1/claims/search-by-plate`, {
          method: 'POST',
          headers: { ...company.auth, 'content-type': 'application/json' },
          body: JSON.stringify({ vehicle_registration: own.vehicle_registration }),
        });
        expect(res.status).toBe(200);
        await res.arrayBuffer();
        times.push(Date.now() - started);
      }
      return times;
    })();
    const cut = await Promise.all(senders);
    searching = false;
    const times = await searches;
    for (const c of cut) {
      expect(c.answer).toMatch(/^HTTP\/1\.1 408 /u);
      expect(c.answer).toContain('"code":"upload_too_slow"');
      expect(c.ms).toBeLessThan(10_000);
    }
    expect(times.length).toBeGreaterThan(0);
    expect(Math.max(...times)).toBeLessThan(2000);
    // Two senders from one address: one warning.
    expect(log.records().filter((l) => l.level === 40 && l.msg === 'upload too slow: cut off').length - warnedBefore).toBe(1);
    expect(log.records().filter((l) => l.level >= 50)).toEqual([]);
  }, 60_000);
});
