import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createLogger } from '../../src/logger';
import { createTestContext, logSink, type TestContext } from '../harness';

/** The request logger is made lazily (only when a line is written): its lines still carry the request id. */
describe('request log lines', () => {
  let ctx: TestContext;
  const log = logSink();
  beforeAll(async () => {
    ctx = await createTestContext({}, { logger: createLogger('info', log.stream) });
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
    const mine = log.records().filter((l) => l.reqId === id);
    expect(mine.map((l) => l.msg)).toEqual(['incoming request', 'request completed']);
  });
});
