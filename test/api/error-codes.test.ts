import { randomUUID } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { claimBody, createTestContext, submitClaim, type Company, type TestContext } from '../harness';

let ctx: TestContext;
let company: Company;
beforeAll(async () => {
  ctx = await createTestContext();
  company = await ctx.newCompany();
});
afterAll(() => ctx.close());

const json = { 'content-type': 'application/json' };

describe('error bodies carry a stable code and the request id', () => {
  it.each([
    ['unauthenticated', 401, () => ctx.app.inject({ method: 'GET', url: '/api/v1/claims' })],
    ['claim_not_found', 404, () => ctx.app.inject({ method: 'GET', url: `/api/v1/claims/${randomUUID()}`, headers: company.auth })],
    ['not_found', 404, () => ctx.app.inject({ method: 'GET', url: '/api/v1/no-such-thing', headers: company.auth })],
    [
      'invalid_json',
      400,
      () => ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: { ...company.auth, ...json }, payload: '{oops' }),
    ],
    [
      'validation_failed',
      422,
      () => ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: claimBody({ claim_date: 'soon' }) }),
    ],
    [
      'unsupported_media_type',
      415,
      () =>
        ctx.app.inject({
          method: 'POST',
          url: '/api/v1/claims',
          headers: { ...company.auth, 'content-type': 'text/plain' },
          payload: JSON.stringify(claimBody()),
        }),
    ],
    [
      'unsupported_media_type',
      415,
      () =>
        ctx.app.inject({
          method: 'POST',
          url: '/api/v1/claims',
          headers: { ...company.auth, 'content-type': 'text/xml' },
          payload: '<a/>',
        }),
    ],
  ])('%s (%i)', async (code, status, send) => {
    const res = await send();
    expect(res.statusCode).toBe(status);
    const body = res.json();
    expect(body.code).toBe(code);
    expect(body.message).toEqual(expect.any(String));
    expect(body.request_id).toBe(res.headers['x-request-id']);
  });

  it("forbidden: another company's claim", async () => {
    const claim = await submitClaim(ctx, company);
    const other = await ctx.newCompany();
    const res = await ctx.app.inject({
      method: 'PATCH',
      url: `/api/v1/claims/${claim.id}/status`,
      headers: other.auth,
      payload: { status: 'closed' },
    });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ code: 'forbidden', request_id: res.headers['x-request-id'] });
  });

  it('says how to authenticate (WWW-Authenticate: Bearer) on a 401, whatever was wrong with the credentials', async () => {
    for (const headers of [{}, { authorization: 'Bearer csk_unknown' }, { authorization: 'Basic abc' }]) {
      const res = await ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers });
      expect(res.statusCode).toBe(401);
      expect(res.headers['www-authenticate']).toBe('Bearer');
    }
    const ok = await ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: company.auth });
    expect(ok.headers['www-authenticate']).toBeUndefined();
  });
});

describe('201 Created', () => {
  it('gives the new claim its Location, which reads it back', async () => {
    const res = await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: claimBody() });
    expect(res.statusCode).toBe(201);
    const { data } = res.json();
    expect(res.headers.location).toBe(`/api/v1/claims/${data.id}`);
    const read = await ctx.app.inject({ method: 'GET', url: res.headers.location as string, headers: company.auth });
    expect(read.json()).toEqual({ data });
  });
});

type Spec = {
  servers?: { url: string }[];
  components: { schemas: Record<string, unknown> };
  paths: Record<string, Record<string, { parameters?: { in: string; name: string }[]; responses: Record<string, { content?: unknown }> }>>;
};

describe('the OpenAPI document', () => {
  const spec = async (): Promise<Spec> => (await ctx.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
  const errorRef = { content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };

  it('names its component schemas and declares servers', async () => {
    const s = await spec();
    expect(Object.keys(s.components.schemas)).toEqual(expect.arrayContaining(['Claim', 'Client', 'Error']));
    expect(s.components.schemas.Error).toMatchObject({ required: ['message', 'code', 'request_id'] });
    expect(s.servers?.length).toBeGreaterThan(0);
    const created = s.paths['/api/v1/claims']!.post!.responses['201'];
    expect(JSON.stringify(created)).toContain('#/components/schemas/Claim');
  });

  it('declares the Idempotency-Key header of POST /claims', async () => {
    const params = (await spec()).paths['/api/v1/claims']!.post!.parameters ?? [];
    expect(params).toContainEqual(expect.objectContaining({ in: 'header', name: 'idempotency-key' }));
  });

  it('declares the Idempotency-Key and Prefer headers of the import', async () => {
    const params = (await spec()).paths['/api/v1/claims/import']!.post!.parameters ?? [];
    expect(params).toContainEqual(expect.objectContaining({ in: 'header', name: 'idempotency-key' }));
    expect(params).toContainEqual(expect.objectContaining({ in: 'header', name: 'prefer' }));
  });

  it('declares every error answer of each claims route, as an Error', async () => {
    const s = await spec();
    const expected: Record<string, string[]> = {
      'post /api/v1/claims': ['400', '401', '409', '422', '429', '500'],
      'get /api/v1/claims': ['401', '422', '429', '500'],
      'get /api/v1/claims/{id}': ['401', '404', '429', '500'],
      'patch /api/v1/claims/{id}/status': ['400', '401', '403', '404', '422', '429', '500'],
      'post /api/v1/claims/search-by-plate': ['400', '401', '422', '429', '500'],
    };
    for (const [route, statuses] of Object.entries(expected)) {
      const [method, path] = route.split(' ') as [string, string];
      const responses = s.paths[path]![method]!.responses;
      for (const status of statuses) expect(responses[status], `${route} ${status}`).toMatchObject(errorRef);
    }
  });
});
