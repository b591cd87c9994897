import type { FastifyInstance, RouteOptions } from 'fastify';

import { needLabel, type Need } from './domain/access/access';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** What the route needs (src/domain/access/access.ts), stated where it is registered. */
    access?: Need;
  }
  interface FastifyInstance {
    /** Every route of the service with the need it states: the access matrix tests are built from it. */
    accessTable: AccessEntry[];
  }
}

/** Where a route is: the API (tokens), Bull Board (the operator's queues), the dashboard and the rest (sessions). */
export type Surface = 'api' | 'queues' | 'dashboard';
export type AccessEntry = { surface: Surface; method: string; url: string; need: Need };

export const surfaceOf = (url: string): Surface =>
  url === '/api/v1' || url.startsWith('/api/v1/') ? 'api' : url.startsWith('/admin/queues') ? 'queues' : 'dashboard';

/**
 * At the root of the app: records every route with the need it states, and refuses to make the
 * app ready (so the service refuses to start) while any route states none.
 */
export function accessRegistry(app: FastifyInstance): void {
  const routes: RouteOptions[] = [];
  app.decorate('accessTable', [] as AccessEntry[]);
  app.addHook('onRoute', (route) => {
    routes.push(route);
  });
  app.addHook('onReady', async () => {
    const missing: string[] = [];
    for (const route of routes) {
      for (const method of [route.method].flat()) {
        if (method === 'HEAD') continue;
        const need = route.config?.access;
        if (need === undefined) missing.push(`${method} ${route.url}`);
        else app.accessTable.push({ surface: surfaceOf(route.url), method, url: route.url, need });
      }
    }
    if (missing.length > 0) {
      throw new Error(`Refusing to start: these routes state no access need (config.access): ${missing.join(', ')}`);
    }
    app.log.debug({ routes: app.accessTable.map((e) => `${e.method} ${e.url} ${needLabel(e.need)}`) }, 'access needs');
  });
}

/**
 * For a scope whose routes a library registers (static assets, the API docs, Bull Board): each
 * route of the scope that states no need of its own gets `need`.
 */
export function routesNeed(scope: FastifyInstance, need: Need): void {
  scope.addHook('onRoute', (route) => {
    route.config = { ...route.config, access: route.config?.access ?? need };
  });
}
