import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, type TestContext } from '../harness';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx.close());

type Operation = {
  operationId?: string;
  tags?: string[];
  responses?: Record<string, unknown>;
  parameters?: { name: string; in: string }[];
  requestBody?: { content: Record<string, { schema: unknown }> };
};

describe('OpenAPI: the registry routes', () => {
  it('lists matches, search by person and both look-up lists with operationIds, the 404s, and the purpose parameter', async () => {
    const spec = (await ctx.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<{
      paths: Record<string, Record<string, Operation>>;
    }>();
    const op = (path: string, method: string) => spec.paths[path]?.[method];
    expect(op('/api/v1/claims/{id}/matches', 'get')?.operationId).toBe('getClaimMatches');
    expect(op('/api/v1/claims/search-by-person', 'post')?.operationId).toBe('searchClaimsByPerson');
    expect(op('/api/v1/lookups', 'get')?.operationId).toBe('listLookups');
    expect(op('/api/v1/claims/{id}/lookups', 'get')?.operationId).toBe('listClaimLookups');
    for (const path of ['/api/v1/claims/{id}/matches', '/api/v1/claims/{id}/lookups']) {
      expect(Object.keys(op(path, 'get')!.responses!)).toEqual(expect.arrayContaining(['200', '401', '404', '422']));
    }
    expect(op('/api/v1/claims/{id}/matches', 'get')!.parameters!.map((p) => `${p.in}:${p.name}`)).toEqual(
      expect.arrayContaining(['query:purpose', 'path:id']),
    );
    const plateBody = JSON.stringify(op('/api/v1/claims/search-by-plate', 'post')!.requestBody);
    expect(plateBody).toContain('"purpose"');
    const personBody = JSON.stringify(op('/api/v1/claims/search-by-person', 'post')!.requestBody);
    expect(personBody).toContain('"examples"');
    expect(personBody).toContain('"date_of_birth"');
    expect(JSON.stringify(op('/api/v1/claims/{id}/matches', 'get')!.responses!['200'])).toContain('matched_on');
  });

  it('lists the incident and network routes with operationIds, named Incident and Network schemas, the 404s and purpose', async () => {
    const spec = (await ctx.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<{
      paths: Record<string, Record<string, Operation>>;
      components: { schemas: Record<string, unknown> };
    }>();
    const op = (path: string) => spec.paths[path]?.get;
    expect(op('/api/v1/claims/{id}/incident')?.operationId).toBe('getClaimIncident');
    expect(op('/api/v1/claims/{id}/network')?.operationId).toBe('getClaimNetwork');
    for (const [path, schema] of [
      ['/api/v1/claims/{id}/incident', 'Incident'],
      ['/api/v1/claims/{id}/network', 'Network'],
    ] as const) {
      expect(Object.keys(op(path)!.responses!)).toEqual(expect.arrayContaining(['200', '401', '404', '422']));
      expect(op(path)!.parameters!.map((p) => `${p.in}:${p.name}`)).toEqual(expect.arrayContaining(['query:purpose', 'path:id']));
      expect(JSON.stringify(op(path)!.responses!['200'])).toContain(`#/components/schemas/${schema}`);
      expect(JSON.stringify(spec.components.schemas[schema]), schema).toContain('"examples"');
    }
    const indicators = JSON.stringify(op('/api/v1/claims/{id}/matches')!.responses!['200']);
    expect(indicators).toContain('duplicate_claim');
    expect(indicators).toContain('"network"');
    expect(JSON.stringify(spec.components.schemas.Alert)).toContain('same_incident');
    expect(JSON.stringify(op('/api/v1/lookups')!.responses!['200'])).toContain('"incident"');
  });
});
