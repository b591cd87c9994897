import http from 'node:http';
import os from 'node:os';

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Prometheus metrics of one process (API or worker), each process with its own registry. Served
 * in the text format at /metrics on a port of their own (METRICS_PORT, WORKER_METRICS_PORT), never
 * on the public API port. Labels carry route templates, statuses and outcomes only: no ids, no
 * company, nothing personal. Every series also carries `process`, which process it counts: the
 * API servers and workers each count their own, and a scrape of one says whose numbers they are.
 * (Not `instance`: Prometheus sets that label itself from the scrape target.)
 */

/** What the import processing reports (the processor calls it when an import ends). */
export interface ImportMetrics {
  importFinished(outcome: { status: 'completed' | 'failed' | 'cancelled'; imported?: number; failed?: number; seconds: number }): void;
}
/** What webhook delivery reports, once per attempt. */
export interface WebhookMetrics {
  delivery(outcome: 'delivered' | 'retry_scheduled' | 'failed' | 'refused'): void;
}

export type MetricsSources = {
  /** Import jobs by state, from the queue (BullMQ) or the imports table (in-process runner). */
  queueDepth?: () => Promise<{ waiting: number; active: number; failed: number }>;
  poolStats?: () => { size: number; inUse: number; waiting: number };
};

export type Metrics = ImportMetrics &
  WebhookMetrics & {
    readonly registry: Registry;
    /** A write refused because a disk is full: the database's, or the one the uploaded files go to. */
    diskFull(where: 'database' | 'storage'): void;
    observeRequest(labels: { method: string; route: string; status: number }, seconds: number): void;
  };

/** The default `process` label: the host (a container's id in Docker) and the process id. */
export const defaultProcessName = (): string => `${os.hostname()}:${process.pid}`;

export function createMetrics(sources: MetricsSources = {}, opts: { processName?: string | undefined } = {}): Metrics {
  const registry = new Registry();
  registry.setDefaultLabels({ process: opts.processName ?? defaultProcessName() });
  collectDefaultMetrics({ register: registry });

  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route template and status code',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const requestSeconds = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by method, route template and status code',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  /** Route templates and methods are bounded (unmatched URLs share one route), so this map is too. */
  const requestSeries = new Map<string, { count: { inc(): void }; seconds: { observe(v: number): void } }>();
  const rowsProcessed = new Counter({
    name: 'claims_import_rows_processed_total',
    help: 'CSV rows of finished imports (imported and failed)',
    registers: [registry],
  });
  const rowsFailed = new Counter({
    name: 'claims_import_rows_failed_total',
    help: 'CSV rows of finished imports that were rejected',
    registers: [registry],
  });
  const importSeconds = new Histogram({
    name: 'claims_import_duration_seconds',
    help: 'Time to process an import, from the start of its processing to its end, by final status',
    labelNames: ['status'] as const,
    buckets: [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800],
    registers: [registry],
  });
  const deliveries = new Counter({
    name: 'claims_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome: delivered (2xx), retry_scheduled, failed (no retry left), refused (target not allowed)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  for (const outcome of ['delivered', 'retry_scheduled', 'failed', 'refused'] as const) deliveries.inc({ outcome }, 0);
  const diskFull = new Counter({
    name: 'claims_disk_full_total',
    help: "Writes refused because a disk is full, by where: database (its disk, or the embedded database's DATA_DIR) or storage (the uploaded files')",
    labelNames: ['where'] as const,
    registers: [registry],
  });
  for (const where of ['database', 'storage'] as const) diskFull.inc({ where }, 0);

  if (sources.queueDepth) {
    const depth = sources.queueDepth;
    new Gauge({
      name: 'claims_import_queue_jobs',
      help: 'Import jobs by state (waiting, active, failed)',
      labelNames: ['state'] as const,
      registers: [registry],
      async collect() {
        try {
          const counts = await depth();
          for (const state of ['waiting', 'active', 'failed'] as const) this.set({ state }, counts[state]);
        } catch {
          // The queue or database is unreachable: the series keep their last values for this scrape.
        }
      },
    });
  }
  if (sources.poolStats) {
    const stats = sources.poolStats;
    new Gauge({
      name: 'claims_db_pool_connections',
      help: 'Database pool: size, connections in use, and callers waiting for one',
      labelNames: ['state'] as const,
      registers: [registry],
      collect() {
        const s = stats();
        this.set({ state: 'size' }, s.size);
        this.set({ state: 'in_use' }, s.inUse);
        this.set({ state: 'waiting' }, s.waiting);
      },
    });
  }

  return {
    registry,
    observeRequest(labels, seconds) {
      // The series of each (method, route, status) is looked up once, not hashed on every request.
      const key = `${labels.method} ${labels.status} ${labels.route}`;
      let series = requestSeries.get(key);
      if (!series) {
        const l = { method: labels.method, route: labels.route, status: String(labels.status) };
        series = { count: requests.labels(l), seconds: requestSeconds.labels(l) };
        requestSeries.set(key, series);
      }
      series.count.inc();
      series.seconds.observe(seconds);
    },
    importFinished({ status, imported = 0, failed = 0, seconds }) {
      importSeconds.observe({ status }, seconds);
      if (status === 'completed') {
        rowsProcessed.inc(imported + failed);
        rowsFailed.inc(failed);
      }
    },
    delivery(outcome) {
      deliveries.inc({ outcome });
    },
    diskFull(where) {
      diskFull.inc({ where });
    },
  };
}

/** Serves GET /metrics of `registry` on its own port; anything else is a 404. */
export async function serveMetrics(registry: Registry, opts: { port: number; host: string }): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => res.writeHead(500, { 'content-type': 'text/plain' }).end('Metrics unavailable\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  return server;
}
