import type http from 'node:http';

import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

import { serveMetrics } from '../../metrics';

declare module 'fastify' {
  interface FastifyInstance {
    /** The /metrics server on METRICS_PORT, once the app is ready (undefined when METRICS_PORT is unset). */
    metricsServer: http.Server | undefined;
  }
}

/**
 * Counts every answered request by method, route template (never the raw URL: ids would make a
 * series per claim) and status, with its duration; and serves /metrics on METRICS_PORT.
 */
export const metricsPlugin = fp(
  async (app: FastifyInstance) => {
    const { metrics, config } = app.deps;
    app.decorate('metricsServer', undefined);
    // A plain callback hook: no promise per request.
    app.addHook('onResponse', (request, reply, done) => {
      metrics.observeRequest(
        { method: request.method, route: request.routeOptions.url ?? 'unmatched', status: reply.statusCode },
        reply.elapsedTime / 1000,
      );
      done();
    });
    if (config.metricsPort === undefined) return;
    app.addHook('onReady', async () => {
      app.metricsServer = await serveMetrics(metrics.registry, { port: config.metricsPort!, host: config.host });
    });
    app.addHook('onClose', async () => {
      const server = app.metricsServer;
      if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    });
  },
  { name: 'metrics' },
);
