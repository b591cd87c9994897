import { Writable } from 'node:stream';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createLogger } from '../../src/logger';
import { createTestContext, type TestContext } from '../harness';

/** The request logger is made lazily (only when a line is written): its lines still carry the request id. */
describe('request log lines', () => {
  let ctx: TestContext;
  const lines: Record<string, unknown>[] = [];
  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString('utf8').split('\n')) if (l.trim()) lines.push(JSON.parse(l));
        done();
      },
    });
    ctx = await createTestContext({}, { logger: createLogger('info', sink) });
  });
  afterAll(async () => ctx.close());

  it('carry the x-request-id of their request, and nothing is logged twice', async () => {
    const company = await ctx.newCompany();
    const res = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims/search-by-plate',
      headers: company.auth,
      payload: { vehicle_registration: 'AB123' },
    });
    expect(res.statusCode).toBe(200);
    const id = res.headers['x-request-id'];
    const mine = lines.filter((l) => l.reqId === id);
    expect(mine.map((l) => l.msg)).toEqual(['incoming request', 'request completed']);
  });
});
