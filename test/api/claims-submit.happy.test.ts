import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { claimBody, createTestContext, type TestContext } from '../harness';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx.close());

describe('POST /api/v1/claims', () => {
  it('creates a claim with status filed and returns it under data with 201', async () => {
    const company = await ctx.newCompany('Acme');
    const body = claimBody({ vehicle_registration: 'ab-12.3 c' });
    const res = await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: body });
    expect(res.statusCode, res.body).toBe(201);
    const { data } = res.json();
    expect(data).toMatchObject({
      claim_date: '2026-03-14',
      claim_type: 'accident',
      amount: '1250.00',
      currency: 'EUR',
      is_at_fault: null,
      vehicle_registration: 'AB123C',
      source: 'api',
      status: 'filed',
      company_name: company.name,
      client: { first_name: 'Ona', last_name: 'Petraitė', date_of_birth: '1985-06-02', id_documents: [{ type: 'passport' }] },
    });
    expect(data.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/);
    expect(JSON.stringify(data)).not.toContain(body.client.id_documents[0]!.number);
  });
});
