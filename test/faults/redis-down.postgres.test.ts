import { randomBytes } from 'node:crypto';
import fs from 'node:fs';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { apiError, claimBody, createTestContext, type TestContext } from '../harness';
import { csv, postImport, validRow } from '../import-helpers';

/**
 * REDIS_URL set (which needs PostgreSQL) but nothing answering there: imports are refused at once,
 * everything else works. No Redis needed: nothing listens on port 1.
 */
describe('when Redis is down', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext({ REDIS_URL: 'redis://127.0.0.1:1', QUEUE_PREFIX: `test-down-${randomBytes(4).toString('hex')}` });
  });
  afterAll(async () => ctx?.close());

  it('refuses the import with a 503 before storing its file, while the other endpoints keep working', async () => {
    const company = await ctx.newCompany('NoRedis');
    const res = await postImport(ctx.app, company.auth, csv([validRow()]));
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual(
      apiError(
        'service_unavailable',
        'Imports are unavailable right now (the job queue cannot be reached); nothing was imported. Try again later.',
      ),
    );
    // Refused up front (the queue is not connected), not after the upload and a queue time-out:
    // the file never reached storage (the local store, under DATA_DIR, has no folder for the company).
    const stored = fs.existsSync(ctx.config.dataDir) ? fs.readdirSync(ctx.config.dataDir, { recursive: true }) : [];
    expect(stored.filter((p) => String(p).includes(company.id))).toEqual([]);
    expect((await ctx.app.inject({ method: 'GET', url: '/api/v1/imports', headers: company.auth })).json().data).toEqual([]);
    const claim = await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: claimBody() });
    expect(claim.statusCode).toBe(201);
  });
});
