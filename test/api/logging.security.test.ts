import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createLogger } from '../../src/logger';
import { claimBody, createTestContext, logSink, type TestContext } from '../harness';

// Everything the service logs at the most verbose level, through the production logger settings.
const { stream: sink, lines } = logSink();

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({}, { logger: createLogger('trace', sink) });
});
afterAll(async () => ctx?.close());

describe('log lines', () => {
  it('never contain a document number, a token, a stack trace or SQL, across successes, validation errors and server errors', async () => {
    const company = await ctx.newCompany();
    const number = 'LT-SECRET4242NUMBER';
    const body = claimBody({}, { id_documents: [{ type: 'passport', number }] });
    expect((await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: body })).statusCode).toBe(201);
    // A data-quality error on the same document, and a validation error quoting it.
    const mismatch = claimBody({}, { date_of_birth: '1970-01-01', id_documents: [{ type: 'passport', number }] });
    expect((await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: mismatch })).statusCode).toBe(
      422,
    );
    const tooLong = claimBody({}, { id_documents: [{ type: 'passport', number: number.repeat(20) }] });
    expect((await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: tooLong })).statusCode).toBe(422);
    // A query string (the dashboard's plate search uses one) stays out of the log.
    await ctx.app.inject({ method: 'GET', url: '/api/v1/claims?status=filed&cursor=PLATE-IN-QUERY-777', headers: company.auth });
    // A server error: the database goes away under the request.
    const broken = await createTestContext({}, { logger: createLogger('trace', sink) });
    const other = await broken.newCompany();
    await broken.deps.db.close();
    const failed = await broken.app.inject({ method: 'POST', url: '/api/v1/claims', headers: other.auth, payload: body });
    // PostgreSQL: an ended pool is a connection fault, answered 503 (and logged as such).
    expect(failed.statusCode).toBe(broken.deps.db.kind === 'postgres' ? 503 : 500);
    await broken.close().catch(() => {});

    const log = lines.join('\n');
    expect(lines.length).toBeGreaterThan(5);
    expect(log).toMatch(/request failed|database unavailable/u); // the 5xx was logged...
    expect(log).not.toContain('SECRET4242NUMBER'); // ...but no document number anywhere
    expect(log).not.toContain('PLATE-IN-QUERY-777');
    expect(log).toContain('"url":"/api/v1/claims"');
    expect(log).not.toContain(company.token);
    expect(log).not.toContain(other.token);
    expect(log).not.toMatch(/\n\s+at .+:\d+:\d+/u); // no stack frames
    expect(log).not.toMatch(/"stack"/u);
    expect(log).not.toMatch(/\b(INSERT INTO|SELECT .+ FROM)\b/u);
  });
});
