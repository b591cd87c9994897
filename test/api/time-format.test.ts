import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { claimBody, createTestContext, type Company, type TestContext } from '../harness';
import { csv, plate, postImport, postLookupBatch, validRow } from '../import-helpers';

/**
 * One time format (DECISIONS, "Answers and forms that help"): every time in every answer is
 * RFC 3339 with a numeric offset, as `created_at` is: a claim, an import (its history included),
 * an alert, an audit event, a look-up, a batch look-up.
 */
const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/u;
/** Anything that looks like a time: a date followed by `T`. */
const LOOKS_LIKE_TIME = /^\d{4}-\d{2}-\d{2}T/u;

let ctx: TestContext;
let company: Company;
let other: Company;
beforeAll(async () => {
  ctx = await createTestContext();
  company = await ctx.newCompany('Times');
  other = await ctx.newCompany('Times elsewhere');
});
afterAll(async () => ctx?.close());

/** Every value of an answer that looks like a time, with its path (`data.0.history.1.at`). */
function timesIn(value: unknown, path = ''): [string, string][] {
  if (typeof value === 'string') return LOOKS_LIKE_TIME.test(value) ? [[path, value]] : [];
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([k, v]) => timesIn(v, path === '' ? k : `${path}.${k}`));
}

async function get(url: string, who: Company = company): Promise<unknown> {
  const res = await ctx.app.inject({ method: 'GET', url, headers: who.auth });
  expect(res.statusCode, `${url}: ${res.body}`).toBe(200);
  return res.json();
}

describe('every time of every answer', () => {
  it('is RFC 3339 with a numeric offset, as created_at is', async () => {
    // Two companies' claims on one plate: an alert for the first, a look-up of the second.
    const shared = plate();
    const first = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims',
      headers: company.auth,
      payload: claimBody({ vehicle_registration: shared }),
    });
    expect(first.statusCode, first.body).toBe(201);
    const claimId: string = first.json().data.id;
    const imported = await postImport(ctx.app, other.auth, csv([validRow({ vehicle_registration: shared }), validRow({ amount: '-1' })]));
    expect(imported.statusCode, imported.body).toBe(200);
    const search = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims/search-by-plate',
      headers: other.auth,
      payload: { vehicle_registration: shared },
    });
    expect(search.statusCode).toBe(200);
    const batch = await postLookupBatch(ctx.app, company.auth, `vehicle_registration\n${shared}\n`);
    expect([200, 202], batch.body).toContain(batch.statusCode);
    const batchId: string = batch.json().data.id;

    const answers: Record<string, unknown> = {
      claim: first.json(),
      claims: await get('/api/v1/claims'),
      search: search.json(),
      import: await get(imported.headers.location as string, other),
      imports: await get('/api/v1/imports', other),
      alerts: await get('/api/v1/alerts'),
      audit: await get('/api/v1/audit-events'),
      lookups: await get('/api/v1/lookups', other),
      'claim lookups': await get(`/api/v1/claims/${claimId}/lookups`),
      'batch lookup': await get(`/api/v1/lookups/batch/${batchId}`),
    };
    const times = Object.entries(answers).flatMap(([name, answer]) =>
      timesIn(answer).map(([path, t]): [string, string] => [`${name}: ${path}`, t]),
    );
    for (const [where, time] of times) expect(time, where).toMatch(TIME);
    // The check saw each kind of time, the import's history included.
    const seen = times.map(([where]) => where.replace(/\.\d+\./gu, '.*.'));
    for (const expected of [
      'claim: data.created_at',
      'import: data.created_at',
      'import: data.finished_at',
      'import: data.history.*.at',
      'imports: data.*.history.*.at',
      'alerts: data.*.created_at',
      'audit: data.*.created_at',
      'lookups: data.*.created_at',
      'claim lookups: data.*.created_at',
      'batch lookup: data.created_at',
    ]) {
      expect(seen, expected).toContain(expected);
    }
  });
});
