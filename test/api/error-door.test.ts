import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { importMessages } from '../../src/domain/imports/import-messages';
import { csv, postImport, validRow } from '../import-helpers';
import { createTestContext, type TestContext } from '../harness';

/**
 * Every error of the API leaves through one door, the error handler: `{ message, code, request_id }`
 * with the request's id, whichever route or job produced it. Here: the synchronous import's answer
 * when its job failed for good (it was sent from the route itself, without code or request id).
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext(
    { IMPORT_ATTEMPTS: '1' },
    {
      beforeChunkWrite: async () => {
        throw new Error('chunk writer broke: relation "claims" is on fire');
      },
    },
  );
});
afterAll(async () => ctx.close());

describe('the synchronous import answers its failure through the error handler', () => {
  it('500 server_error with the request id, and no internal text', async () => {
    const company = await ctx.newCompany();
    const res = await postImport(ctx.app, company.auth, csv([validRow(), validRow()]));
    expect(res.statusCode, res.body).toBe(500);
    const body = res.json();
    // The import's own message, saying what happened to the file (before, the route's body missed
    // the schema's code and request id, and its serializer's failure answered a bare "Server error.").
    expect(body).toEqual({ message: importMessages.failed, code: 'server_error', request_id: res.headers['x-request-id'] });
    expect(res.body).not.toMatch(/relation|on fire|chunk writer/u);
  });
});
