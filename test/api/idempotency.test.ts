import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createIdempotencyService } from '../../src/domain/idempotency/idempotency-service';
import { apiError, claimBody, createTestContext, type TestContext } from '../harness';
import { csv, postImport, validRow } from '../import-helpers';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx?.close());

const submit = (auth: Record<string, string>, payload: unknown, key?: string) =>
  ctx.app.inject({
    method: 'POST',
    url: '/api/v1/claims',
    headers: { ...auth, ...(key ? { 'idempotency-key': key } : {}) },
    payload: payload as object,
  });

const countClaims = async (companyId: string) =>
  (await ctx.deps.db.query<{ n: number }>('SELECT count(*)::int AS n FROM claims WHERE company_id = $1', [companyId]))[0]!.n;

describe('Idempotency-Key on POST /api/v1/claims', () => {
  it('replays the first response for a repeat of the same request, without writing again', async () => {
    const company = await ctx.newCompany();
    const key = randomUUID();
    const body = claimBody();
    const first = await submit(company.auth, body, key);
    expect(first.statusCode).toBe(201);
    // The same JSON with its fields in another order is the same request.
    const reordered = Object.fromEntries(Object.entries(body).reverse());
    const again = await submit(company.auth, reordered, key);
    expect(again.statusCode).toBe(201);
    expect(again.json()).toEqual(first.json());
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(await countClaims(company.id)).toBe(1);
  });

  it('answers 422 naming the header when the key was used for a different request', async () => {
    const company = await ctx.newCompany();
    const key = randomUUID();
    expect((await submit(company.auth, claimBody(), key)).statusCode).toBe(201);
    const other = await submit(company.auth, claimBody(), key);
    expect(other.statusCode).toBe(422);
    expect(other.json()).toEqual(
      apiError(
        'validation_failed',
        'The Idempotency-Key header was already used for a different request; use a new key for a new request.',
        { 'Idempotency-Key': ['The Idempotency-Key header was already used for a different request; use a new key for a new request.'] },
      ),
    );
    expect(await countClaims(company.id)).toBe(1);
  });

  it('keeps keys per company, and writes every request sent without a key', async () => {
    const a = await ctx.newCompany();
    const b = await ctx.newCompany();
    const key = 'shared-key-1';
    expect((await submit(a.auth, claimBody(), key)).statusCode).toBe(201);
    expect((await submit(b.auth, claimBody(), key)).statusCode).toBe(201);
    const body = claimBody();
    await submit(a.auth, body);
    await submit(a.auth, body);
    expect(await countClaims(a.id)).toBe(3);
  });

  it('rejects a malformed key', async () => {
    const company = await ctx.newCompany();
    for (const key of ['x'.repeat(256), 'with space', 'ąčę']) {
      const res = await ctx.app.inject({
        method: 'POST',
        url: '/api/v1/claims',
        headers: { ...company.auth, 'idempotency-key': key },
        payload: claimBody(),
      });
      expect(res.statusCode).toBe(422);
      expect(Object.keys(res.json().errors)).toEqual(['Idempotency-Key']);
    }
    expect(await countClaims(company.id)).toBe(0);
  });

  it('replays a validation failure too (the same request gets the same answer)', async () => {
    const company = await ctx.newCompany();
    const key = randomUUID();
    const bad = claimBody({ claim_date: '2999-01-01' });
    const first = await submit(company.auth, bad, key);
    expect(first.statusCode).toBe(422);
    const again = await submit(company.auth, bad, key);
    expect(again.statusCode).toBe(422);
    expect(again.json()).toEqual(first.json());
    expect(again.headers['idempotent-replayed']).toBe('true');
  });

  it('lets concurrent duplicates write once: one 201, the others the same 201 replayed or 409 while it runs', async () => {
    const company = await ctx.newCompany();
    const key = randomUUID();
    const body = claimBody();
    const results = await Promise.all(Array.from({ length: 8 }, () => submit(company.auth, body, key)));
    const codes = results.map((r) => r.statusCode);
    expect(codes.every((c) => c === 201 || c === 409)).toBe(true);
    const ids = new Set(results.filter((r) => r.statusCode === 201).map((r) => r.json().data.id));
    expect(ids.size).toBe(1);
    for (const r of results.filter((x) => x.statusCode === 409)) {
      expect(r.json()).toEqual(
        apiError('idempotency_in_progress', 'A request with this Idempotency-Key is still being processed; retry later.'),
      );
    }
    expect(await countClaims(company.id)).toBe(1);
  });

  it('forgets a key after 24 hours', async () => {
    const company = await ctx.newCompany();
    const key = randomUUID();
    expect((await submit(company.auth, claimBody(), key)).statusCode).toBe(201);
    await ctx.deps.db.query(`UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE company_id = $1`, [company.id]);
    expect((await submit(company.auth, claimBody(), key)).statusCode).toBe(201);
    expect(await countClaims(company.id)).toBe(2);
  });

  it('removes expired keys from the database as requests complete, at most hourly', async () => {
    const company = await ctx.newCompany();
    await submit(company.auth, claimBody(), randomUUID());
    await ctx.deps.db.query(`UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE company_id = $1`, [company.id]);
    let clock = Date.now() + 2 * 3_600_000; // past any purge this process already did
    const service = createIdempotencyService({ repos: ctx.deps.repos, now: () => clock });
    await service.begin(company.id, randomUUID(), 'h');
    const keys = async () =>
      (await ctx.deps.db.query<{ n: number }>('SELECT count(*)::int AS n FROM idempotency_keys WHERE company_id = $1', [company.id]))[0]!.n;
    const fresh = randomUUID();
    await service.begin(company.id, fresh, 'h2');
    await service.complete(company.id, fresh, 201, { body: {} });
    expect(await keys()).toBe(2); // the expired key is gone; the two fresh ones stay
    clock += 60_000;
    await ctx.deps.db.query(`UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE company_id = $1`, [company.id]);
    const third = randomUUID();
    await service.begin(company.id, third, 'h3');
    await service.complete(company.id, third, 201, { body: {} });
    expect(await keys()).toBe(3); // within the hour: nothing purged
  });
});

describe('Idempotency-Key on POST /api/v1/claims/import', () => {
  const imports = async (companyId: string) =>
    (await ctx.deps.db.query<{ n: number }>('SELECT count(*)::int AS n FROM imports WHERE company_id = $1', [companyId]))[0]!.n;

  it('replays the summary for the same file without importing it again; another file with the key is a 422', async () => {
    const company = await ctx.newCompany();
    const key = randomUUID();
    const file = csv([validRow(), validRow(), validRow({ claim_date: '2999-01-01' })]);
    const first = await postImport(ctx.app, company.auth, file, { headers: { 'idempotency-key': key } });
    expect(first.statusCode).toBe(200);
    expect(first.json()).toMatchObject({ imported: 2, failed: 1 });
    const again = await postImport(ctx.app, company.auth, file, { headers: { 'idempotency-key': key }, fileName: 'renamed.csv' });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(first.json());
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(await countClaims(company.id)).toBe(2);
    expect(await imports(company.id)).toBe(1);

    const other = await postImport(ctx.app, company.auth, csv([validRow()]), { headers: { 'idempotency-key': key } });
    expect(other.statusCode).toBe(422);
    expect(Object.keys(other.json().errors)).toEqual(['Idempotency-Key']);
    expect(await countClaims(company.id)).toBe(2);
    // Neither the replayed nor the refused upload is kept in storage.
    const dir = path.join(ctx.config.dataDir, 'imports', 'imports', company.id);
    expect(fs.existsSync(dir) ? fs.readdirSync(dir) : []).toEqual([]);
  });

  it('replays a 202 with the same Location for an asynchronous import', async () => {
    const company = await ctx.newCompany();
    const key = randomUUID();
    const file = csv([validRow()]);
    const headers = { 'idempotency-key': key, prefer: 'respond-async' };
    const first = await postImport(ctx.app, company.auth, file, { headers });
    expect(first.statusCode).toBe(202);
    const again = await postImport(ctx.app, company.auth, file, { headers });
    expect(again.statusCode).toBe(202);
    expect(again.headers.location).toBe(first.headers.location);
    expect(await imports(company.id)).toBe(1);
  });
});
