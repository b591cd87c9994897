import { randomUUID } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { apiError, claimBody, createTestContext, type TestContext, addDays, type Company } from '../harness';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('error responses', () => {
  let ctx: TestContext;
  let company: Company;
  beforeAll(async () => {
    ctx = await createTestContext();
    company = await ctx.newCompany();
  });
  afterAll(async () => ctx.close());

  const validBody = () => claimBody({ claim_date: addDays(ctx.deps.today(), -3) });
  const postRaw = (payload: string, extra: Record<string, string> = {}) =>
    ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims',
      headers: { ...company.auth, 'content-type': 'application/json', ...extra },
      payload,
    });

  it('answers a body that is not valid JSON with 400 and a JSON message, on every JSON route', async () => {
    const id = randomUUID();
    for (const [method, url] of [
      ['POST', '/api/v1/claims'],
      ['PATCH', `/api/v1/claims/${id}/status`],
      ['POST', '/api/v1/claims/search-by-plate'],
      ['POST', '/api/v1/claims/search-by-person'],
    ] as const) {
      const res = await ctx.app.inject({
        method,
        url,
        headers: { ...company.auth, 'content-type': 'application/json' },
        payload: '{"client": ',
      });
      expect(res.statusCode, url).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.json()).toEqual(apiError('invalid_json', 'The request body is not valid JSON.'));
    }
  });

  it('does not echo the broken body in the 400', async () => {
    const res = await postRaw('{"client": "SECRET-PASSPORT-123", oops}');
    expect(res.statusCode).toBe(400);
    expect(res.body).not.toContain('SECRET');
    expect(res.body).not.toContain('oops');
  });

  it('answers an empty JSON body with 400', async () => {
    const res = await postRaw('');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual(apiError('invalid_json', expect.any(String)));
  });

  it('answers JSON that is not an object with 422', async () => {
    for (const payload of ['[]', '[{"client":{}}]', '"claim"', '42', 'true', 'null']) {
      const res = await postRaw(payload);
      expect(res.statusCode, payload).toBe(422);
      expect(res.json(), payload).toEqual(
        apiError('validation_failed', 'The request body must be a JSON object.', { body: ['The request body must be a JSON object.'] }),
      );
    }
  });

  it('answers a body that is not an object with 422 on the status and search routes too', async () => {
    const search = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims/search-by-plate',
      headers: { ...company.auth, 'content-type': 'application/json' },
      payload: '["AB123"]',
    });
    expect(search.statusCode).toBe(422);
    const status = await ctx.app.inject({
      method: 'PATCH',
      url: `/api/v1/claims/${randomUUID()}/status`,
      headers: { ...company.auth, 'content-type': 'application/json' },
      payload: '"closed"',
    });
    expect(status.statusCode).toBe(422);
  });

  it('ignores unknown fields, at the top level and inside client and documents', async () => {
    const body = validBody();
    const payload = {
      ...body,
      unknown_field: 'x',
      client: { ...body.client, nickname: 'Onutė', id_documents: [{ ...body.client.id_documents[0], issued_by: 'LT' }] },
    };
    const res = await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.body).not.toContain('unknown_field');
    expect(res.body).not.toContain('nickname');
    expect(res.body).not.toContain('issued_by');
  });

  it('answers a server failure with 500 {"message":"Server error."}: no stack, no SQL, no input', async () => {
    // A real database failure, not a mock: the table the status update writes to is gone for a moment.
    const res1 = await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: validBody() });
    const claim = res1.json().data;
    await ctx.deps.db.query('ALTER TABLE claim_status_changes RENAME TO claim_status_changes_away');
    let res;
    try {
      res = await ctx.app.inject({
        method: 'PATCH',
        url: `/api/v1/claims/${claim.id}/status`,
        headers: company.auth,
        payload: { status: 'closed' },
      });
    } finally {
      await ctx.deps.db.query('ALTER TABLE claim_status_changes_away RENAME TO claim_status_changes');
    }
    expect(res.statusCode).toBe(500);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json()).toEqual(apiError('server_error', 'Server error.'));
    expect(res.body).not.toMatch(/claim_status_changes|relation|SELECT|INSERT|stack|\bat\s/i);
  });

  it('leaves nothing half-done after a server failure: the status update was rolled back', async () => {
    const created = await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: validBody() });
    const claim = created.json().data;
    await ctx.deps.db.query('ALTER TABLE claim_status_changes RENAME TO claim_status_changes_away');
    try {
      const res = await ctx.app.inject({
        method: 'PATCH',
        url: `/api/v1/claims/${claim.id}/status`,
        headers: company.auth,
        payload: { status: 'closed' },
      });
      expect(res.statusCode).toBe(500);
    } finally {
      await ctx.deps.db.query('ALTER TABLE claim_status_changes_away RENAME TO claim_status_changes');
    }
    const read = await ctx.app.inject({ method: 'GET', url: `/api/v1/claims/${claim.id}`, headers: company.auth });
    expect(read.json().data.status).toBe('filed');
  });

  it('answers with a JSON body whatever the Accept header says', async () => {
    const cases = [
      { method: 'GET', url: '/api/v1/claims', headers: {} }, // 401
      { method: 'GET', url: `/api/v1/claims/${randomUUID()}`, headers: company.auth }, // 404
      { method: 'GET', url: '/api/v1/no-such-route', headers: company.auth }, // 404 without a route
      { method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: {} }, // 422
      { method: 'POST', url: '/api/v1/claims', headers: { ...company.auth, 'content-type': 'application/json' }, payload: '{' }, // 400
    ] as const;
    for (const accept of ['text/html', 'application/xml', 'text/plain', '*/*']) {
      for (const c of cases) {
        const res = await ctx.app.inject({ ...c, headers: { ...c.headers, accept } });
        expect(res.statusCode, `${c.url} ${accept}`).toBeGreaterThanOrEqual(400);
        expect(res.headers['content-type'], `${c.url} ${accept}`).toMatch(/^application\/json/);
        expect(typeof res.json().message).toBe('string');
      }
    }
  });

  it('answers a request with an unsupported content type with a JSON 4xx', async () => {
    const res = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims',
      headers: { ...company.auth, 'content-type': 'application/xml' },
      payload: '<claim/>',
    });
    expect(res.statusCode).toBe(415);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json()).toEqual(apiError('unsupported_media_type', 'Unsupported Content-Type; send application/json.'));
  });

  it('answers an unknown path under /api/v1 with a JSON 404', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: '/api/v1/nothing-here', headers: company.auth });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual(apiError('not_found', expect.any(String)));
  });

  it('puts a fresh x-request-id on every response, errors included', async () => {
    const responses = await Promise.all([
      ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: company.auth }),
      ctx.app.inject({ method: 'GET', url: '/api/v1/claims' }),
      ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: {} }),
      ctx.app.inject({ method: 'GET', url: '/api/v1/nothing-here' }),
      ctx.app.inject({ method: 'GET', url: '/healthz' }),
    ]);
    const ids = responses.map((r) => r.headers['x-request-id']);
    for (const id of ids) expect(id).toMatch(UUID);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('when the database is unreachable', () => {
  let ctx: TestContext;
  let company: Company;
  beforeAll(async () => {
    ctx = await createTestContext();
    company = await ctx.newCompany();
    await ctx.deps.db.close();
  });
  // The database is closed already; closing it again is allowed to fail (PGlite refuses a second close).
  afterAll(async () => ctx.close().catch(() => undefined));

  it('answers API requests with a JSON 5xx: on PostgreSQL a lost connection is 503 with Retry-After', async () => {
    const res = await ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: company.auth });
    if (ctx.deps.db.kind === 'postgres') {
      // The pool was ended: a connection fault, answered as the database being unavailable.
      expect(res.statusCode).toBe(503);
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      expect(res.json()).toMatchObject({ code: 'service_unavailable', message: expect.stringMatching(/database/iu) });
    } else {
      expect(res.statusCode).toBe(500);
      expect(res.json()).toEqual(apiError('server_error', 'Server error.'));
    }
  });

  it('reports not ready on /readyz with 503, while /healthz stays 200', async () => {
    const ready = await ctx.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(503);
    expect(ready.headers['content-type']).toMatch(/^application\/json/);
    expect(ready.json()).toMatchObject({ status: 'unavailable' });
    expect((await ctx.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });
});

describe('with RATE_LIMIT_PER_MINUTE set', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext({ RATE_LIMIT_PER_MINUTE: '3' });
  });
  afterAll(async () => ctx.close());

  it('answers past the limit with 429, Retry-After and a JSON message, per token', async () => {
    const limited = await ctx.newCompany();
    const other = await ctx.newCompany();
    const get = (company: Company) => ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: company.auth });
    for (let i = 0; i < 3; i++) expect((await get(limited)).statusCode).toBe(200);
    const res = await get(limited);
    expect(res.statusCode).toBe(429);
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json()).toEqual(apiError('rate_limited', expect.any(String)));
    // Another token has its own budget.
    expect((await get(other)).statusCode).toBe(200);
  });
});
