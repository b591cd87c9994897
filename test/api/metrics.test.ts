import type { AddressInfo } from 'node:net';
import os from 'node:os';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { loadConfig } from '../../src/config';
import { createMetrics } from '../../src/metrics';
import { createTestContext, type TestContext } from '../harness';
import { csv, futureDate, postImport, validRow } from '../import-helpers';

/** Prometheus metrics on METRICS_PORT, scraped over HTTP after real requests and a real import. */
let ctx: TestContext;
let url: string;
beforeAll(async () => {
  ctx = await createTestContext({ METRICS_PORT: '0', HOST: '127.0.0.1' });
  url = `http://127.0.0.1:${(ctx.app.metricsServer!.address() as AddressInfo).port}/metrics`;
});
afterAll(async () => ctx?.close());

/** The labels of a sample line, or undefined for a comment or blank line. */
function sample(line: string) {
  const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/u.exec(line);
  if (!m) return undefined;
  const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/gu)].map((l) => [l[1]!, l[2]!]));
  return { name: m[1]!, labels, value: Number(m[3]) };
}

/** The value of one series in the text format; labels given are matched exactly, but for `process` (on every series). */
function value(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const s = sample(line);
    if (!s || s.name !== name) continue;
    const { process: _process, ...got } = s.labels;
    if (Object.keys(labels).length === Object.keys(got).length && Object.entries(labels).every(([k, v]) => got[k] === v)) return s.value;
  }
  return undefined;
}
const scrape = async () => {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain/u);
  return res.text();
};

describe('metrics', () => {
  it('is off unless METRICS_PORT is set', () => {
    expect(loadConfig({}).metricsPort).toBeUndefined();
    expect(() => loadConfig({ METRICS_PORT: 'x' })).toThrow(/METRICS_PORT/u);
  });

  it('counts requests by route and status, import rows processed and failed, and import durations', async () => {
    const before = await scrape();
    const company = await ctx.newCompany();
    const rows = [validRow(), validRow(), validRow(), validRow({ claim_date: futureDate() })];
    const res = await postImport(ctx.app, company.auth, csv(rows));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ imported: 3, failed: 1 });
    expect(
      (
        await ctx.app.inject({
          method: 'GET',
          url: `/api/v1/imports/${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}`,
          headers: company.auth,
        })
      ).statusCode,
    ).toBe(404);

    const after = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}) =>
      (value(after, name, labels) ?? 0) - (value(before, name, labels) ?? 0);
    expect(delta('claims_import_rows_processed_total')).toBe(4);
    expect(delta('claims_import_rows_failed_total')).toBe(1);
    expect(delta('claims_import_duration_seconds_count', { status: 'completed' })).toBe(1);
    expect(delta('http_requests_total', { method: 'POST', route: '/api/v1/claims/import', status: '200' })).toBe(1);
    // The route template, never the id.
    expect(delta('http_requests_total', { method: 'GET', route: '/api/v1/imports/:id', status: '404' })).toBe(1);
    expect(delta('http_request_duration_seconds_count', { method: 'POST', route: '/api/v1/claims/import', status: '200' })).toBe(1);
    expect(after).not.toContain(company.id);
  });

  it('reports the import queue by state, the database pool, webhook deliveries and the process defaults', async () => {
    const text = await scrape();
    for (const state of ['waiting', 'active', 'failed'])
      expect(value(text, 'claims_import_queue_jobs', { state }), state).toBeGreaterThanOrEqual(0);
    // On PostgreSQL: the pool, and as many for the statements run with their generic plan (db.ts).
    expect(value(text, 'claims_db_pool_connections', { state: 'size' })).toBe(
      ctx.deps.db.kind === 'postgres' ? 2 * ctx.config.dbPoolSize : 1,
    );
    expect(value(text, 'claims_db_pool_connections', { state: 'in_use' })).toBeGreaterThanOrEqual(0);
    for (const outcome of ['delivered', 'retry_scheduled', 'failed', 'refused']) {
      expect(value(text, 'claims_webhook_deliveries_total', { outcome }), outcome).toBeGreaterThanOrEqual(0);
    }
    expect(value(text, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(value(text, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
  });

  it('labels every series with the process it counts: PROCESS_NAME, by default the host and the process id', async () => {
    const text = await scrape();
    const names = new Set(
      text
        .split('\n')
        .map(sample)
        .map((s) => s?.labels.process),
    );
    names.delete(undefined);
    expect(names).toEqual(new Set([`${os.hostname()}:${process.pid}`]));
    expect(loadConfig({ PROCESS_NAME: 'api-1' }).processName).toBe('api-1');
    expect(() => loadConfig({ PROCESS_NAME: 'a b' })).toThrow(/PROCESS_NAME/u);
    const named = createMetrics({}, { processName: 'api-1' });
    expect(await named.registry.metrics()).toMatch(/^claims_import_rows_processed_total\{process="api-1"\} 0$/mu);
  });

  it('answers 404 for anything but GET /metrics', async () => {
    expect((await fetch(url.replace('/metrics', '/'))).status).toBe(404);
  });
});
