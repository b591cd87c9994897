import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createLogger } from '../../src/logger';
import { claimBody, createTestContext, logSink, type TestContext } from '../harness';

const { stream: sink, lines } = logSink();

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({}, { logger: createLogger('trace', sink) });
});
afterAll(async () => ctx?.close());

describe('search by person: log lines', () => {
  it('never contain the document number searched for, found or not, valid or not', async () => {
    const company = await ctx.newCompany();
    const number = 'LTU-PERSON7777SECRET';
    const body = claimBody({}, { id_documents: [{ type: 'passport', number }] });
    expect((await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: body })).statusCode).toBe(201);
    for (const payload of [
      { date_of_birth: body.client.date_of_birth, id_documents: [{ type: 'passport', number }] },
      { date_of_birth: '1901-01-01', id_documents: [{ type: 'passport', number }] },
      { date_of_birth: 'not a date', id_documents: [{ type: 'passport', number }] },
      { date_of_birth: body.client.date_of_birth, id_documents: [{ type: 'visa', number }] },
    ]) {
      await ctx.app.inject({ method: 'POST', url: '/api/v1/claims/search-by-person', headers: company.auth, payload });
    }
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(line.toUpperCase()).not.toContain('PERSON7777SECRET');
  });
});
