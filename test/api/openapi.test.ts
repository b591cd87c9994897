import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { isScopeNeed } from '../../src/domain/access/access';
import { createTestContext, type TestContext } from '../harness';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx.close());

type Operation = { operationId?: string; security?: unknown[]; responses?: Record<string, unknown>; requestBody?: unknown };
type Spec = {
  openapi: string;
  info: { title: string; version: string; license?: Record<string, unknown> };
  paths: Record<string, Record<string, Operation>>;
  components?: Record<string, Record<string, unknown>>;
};

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

async function spec(): Promise<Spec> {
  const res = await ctx.app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
  expect(res.statusCode).toBe(200);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  return res.json();
}

function operations(s: Spec) {
  return Object.entries(s.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, op]) => ({ path, method, op })),
  );
}

describe('GET /api/v1/openapi.json', () => {
  it('is an OpenAPI 3.1 document served without a token', async () => {
    const s = await spec();
    expect(s.openapi).toMatch(/^3\.1\./);
    expect(s.info.title).toEqual(expect.any(String));
    expect(s.info.version).toEqual(expect.any(String));
  });

  it('names the project’s licence: proprietary, as package.json’s UNLICENSED says, by name and an SPDX reference', async () => {
    const packageFile = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../package.json');
    expect((JSON.parse(fs.readFileSync(packageFile, 'utf8')) as { license?: string }).license).toBe('UNLICENSED');
    // OpenAPI 3.1: a name, and either an SPDX `identifier` or a `url`, never both.
    expect((await spec()).info.license).toEqual({ name: 'Proprietary: all rights reserved', identifier: 'LicenseRef-Proprietary' });
  });

  it('lists every claims route with its operationId', async () => {
    const s = await spec();
    const byId = Object.fromEntries(operations(s).map(({ path, method, op }) => [op.operationId, `${method.toUpperCase()} ${path}`]));
    expect(byId).toMatchObject({
      submitClaim: 'POST /api/v1/claims',
      listClaims: 'GET /api/v1/claims',
      getClaim: 'GET /api/v1/claims/{id}',
      updateClaimStatus: 'PATCH /api/v1/claims/{id}/status',
      searchClaimsByPlate: 'POST /api/v1/claims/search-by-plate',
    });
  });

  it('gives every /api/v1 operation a unique operationId', async () => {
    const ops = operations(await spec()).filter((o) => o.path.startsWith('/api/v1/'));
    expect(ops.length).toBeGreaterThanOrEqual(5);
    for (const { path, method, op } of ops) expect(op.operationId, `${method} ${path}`).toMatch(/^[A-Za-z][A-Za-z0-9]+$/);
    expect(new Set(ops.map((o) => o.op.operationId)).size).toBe(ops.length);
  });

  it('documents bearer authentication and the error answers of the claims routes', async () => {
    const s = await spec();
    expect(s.components?.securitySchemes?.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    for (const { path, method, op } of operations(s).filter((o) => o.path.startsWith('/api/v1/claims'))) {
      // Each operation names the scope its route states (config.access) and the 403 it answers without it.
      const route = ctx.app.accessTable.find((e) => e.method === method.toUpperCase() && e.url === path.replace(/\{(\w+)\}/gu, ':$1'));
      const scope = route && isScopeNeed(route.need) ? route.need.scope : undefined;
      expect(scope, `${method} ${path}`).toBeDefined();
      expect(op.security, `${method} ${path}`).toEqual([{ bearerAuth: [scope] }]);
      expect(Object.keys(op.responses ?? {}), `${method} ${path}`).toEqual(expect.arrayContaining(['401', '403', '422', '500']));
    }
    expect(Object.keys(s.paths['/api/v1/claims']!.post!.responses!)).toContain('201');
    expect(Object.keys(s.paths['/api/v1/claims/{id}/status']!.patch!.responses!)).toEqual(expect.arrayContaining(['200', '403', '404']));
  });

  it('does not list the documentation and probe routes themselves', async () => {
    const paths = Object.keys((await spec()).paths);
    for (const hidden of ['/api/v1/openapi.json', '/healthz', '/readyz']) expect(paths).not.toContain(hidden);
  });

  it('describes only the /api/v1 resources, not the dashboard pages', async () => {
    const paths = Object.keys((await spec()).paths);
    expect(paths.filter((p) => !p.startsWith('/api/v1/'))).toEqual([]);
  });

  it('never describes a document number in a response', async () => {
    const s = await spec();
    for (const { op } of operations(s)) expect(JSON.stringify(op.responses ?? {})).not.toMatch(/"number"\s*:/);
  });
});

describe('documentation and probes', () => {
  it('serves the API documentation as HTML at /docs', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: '/docs' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toMatch(/<html/i);
  });

  it('answers /healthz with 200 without a token', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: '/healthz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
  });

  it('answers /readyz with 200 when the database is reachable', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: '/readyz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ready' });
  });
});
