import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { addDays, claimBody, createTestContext, type Company, type TestContext } from '../harness';

/**
 * "Today" comes from the service's clock, which a test can set: date rules are tested on the
 * dates they name, whatever the date the suite runs on.
 */
const TODAY = '2031-05-10';
let ctx: TestContext;
let company: Company;
beforeAll(async () => {
  ctx = await createTestContext({}, { today: () => TODAY });
  company = await ctx.newCompany();
});
afterAll(() => ctx.close());

const submit = (claimDate: string) =>
  ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: claimBody({ claim_date: claimDate }) });

describe('an injected clock', () => {
  it("is the service's today", () => {
    expect(ctx.deps.today()).toBe(TODAY);
  });

  it('decides what is in the future and what is too old', async () => {
    expect((await submit(TODAY)).statusCode).toBe(201);
    expect((await submit('2028-05-10')).statusCode).toBe(201);
    const future = await submit(addDays(TODAY, 1));
    expect(future.statusCode).toBe(422);
    expect(future.json().errors).toEqual({ claim_date: ['The claim date cannot be in the future.'] });
    expect((await submit('2028-05-09')).statusCode).toBe(422);
  });
});
