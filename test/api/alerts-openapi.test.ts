import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, type TestContext } from '../harness';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx.close());

type Operation = {
  operationId?: string;
  responses?: Record<string, unknown>;
  parameters?: { name: string; in: string }[];
  requestBody?: { content: Record<string, { schema: unknown }> };
};

describe('OpenAPI: alerts, batch look-ups and data quality', () => {
  it('documents every new route with its operationId, named schemas with examples, parameters and errors', async () => {
    const spec = (await ctx.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<{
      paths: Record<string, Record<string, Operation>>;
      components: { schemas: Record<string, unknown> };
    }>();
    const op = (path: string, method: string) => spec.paths[path]?.[method];
    expect(op('/api/v1/alerts', 'get')?.operationId).toBe('listAlerts');
    expect(op('/api/v1/lookups/batch', 'post')?.operationId).toBe('createLookupBatch');
    expect(op('/api/v1/lookups/batch/{id}', 'get')?.operationId).toBe('getLookupBatch');
    expect(op('/api/v1/lookups/batch/{id}/results.csv', 'get')?.operationId).toBe('getLookupBatchResults');
    expect(op('/api/v1/quality', 'get')?.operationId).toBe('getQuality');

    for (const name of ['Alert', 'LookupBatch', 'QualityReport']) {
      expect(spec.components.schemas[name], name).toBeDefined();
      expect(JSON.stringify(spec.components.schemas[name]), name).toContain('"examples"');
    }
    expect(JSON.stringify(op('/api/v1/alerts', 'get')!.responses!['200'])).toContain('#/components/schemas/Alert');
    expect(JSON.stringify(op('/api/v1/lookups/batch/{id}', 'get')!.responses!['200'])).toContain('#/components/schemas/LookupBatch');
    expect(JSON.stringify(op('/api/v1/quality', 'get')!.responses!['200'])).toContain('#/components/schemas/QualityReport');
    expect(op('/api/v1/alerts', 'get')!.parameters!.map((p) => `${p.in}:${p.name}`)).toEqual(
      expect.arrayContaining(['query:claim_id', 'query:cursor', 'query:limit']),
    );
    expect(op('/api/v1/quality', 'get')!.parameters!.map((p) => `${p.in}:${p.name}`)).toEqual(['query:days']);
    expect(Object.keys(op('/api/v1/lookups/batch', 'post')!.requestBody!.content)).toEqual(['multipart/form-data']);
    expect(Object.keys(op('/api/v1/lookups/batch', 'post')!.responses!)).toEqual(expect.arrayContaining(['202', '401', '422']));
    expect(Object.keys(op('/api/v1/lookups/batch/{id}/results.csv', 'get')!.responses!)).toEqual(
      expect.arrayContaining(['200', '404', '409']),
    );
    expect(Object.keys(op('/api/v1/lookups/batch/{id}', 'get')!.responses!)).toEqual(expect.arrayContaining(['200', '401', '404']));
  });
});
