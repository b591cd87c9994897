import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { buildApp } from '../../src/app';
import { createTestContext, type TestContext } from '../harness';

/**
 * Every route states what it needs where it is registered (DECISIONS, "One decision"): the
 * service refuses to start with a route that states nothing, so no route can be added outside the
 * access matrix tests, which are built from the same registrations.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

describe('the access registry', () => {
  it('refuses to start with a route that states no need, naming it', async () => {
    const app = await buildApp(ctx.deps, {
      logger: pino({ level: 'silent' }),
      extraRoutes: async (root) => {
        root.get('/reports/everything', async () => ({ secret: 'everything' }));
      },
    });
    try {
      await expect(app.ready()).rejects.toThrow(/state no access need.*GET \/reports\/everything/u);
    } finally {
      await app.close().catch(() => {});
    }
  });

  it('starts when the same route states its need, and then decides it', async () => {
    const app = await buildApp(ctx.deps, {
      logger: pino({ level: 'silent' }),
      extraRoutes: async (root) => {
        root.get('/reports/everything', { config: { access: 'operator' } }, async () => ({ secret: 'everything' }));
      },
    });
    try {
      await app.ready();
      expect(app.accessTable).toContainEqual({ surface: 'dashboard', method: 'GET', url: '/reports/everything', need: 'operator' });
    } finally {
      await app.close();
    }
  });

  it('records a need for every route of the running service: the API, the dashboard, the docs and the probes', () => {
    const table = ctx.app.accessTable;
    const of = (method: string, url: string) => table.find((e) => e.method === method && e.url === url)?.need;
    expect(of('POST', '/api/v1/claims')).toEqual({ scope: 'claims:write' });
    expect(of('GET', '/settings/tokens')).toBe('admin');
    expect(of('GET', '/settings/security')).toBe('signed-in');
    expect(of('GET', '/operator')).toBe('operator');
    expect(of('GET', '/healthz')).toBe('public');
    expect(of('GET', '/docs')).toBe('public');
  });
});
