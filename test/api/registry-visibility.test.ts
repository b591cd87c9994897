import { randomBytes, randomUUID } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { addDays, claimBody, createTestContext, type TestContext } from '../harness';

describe('registry reads see the claims of an import only once it has completed', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(async () => ctx.close());

  it('matches, indicators, search by person and look-ups leave out a claim of an unfinished import', async () => {
    const [own, importer] = [await ctx.newCompany('Own'), await ctx.newCompany('Importer')];
    const plate = `V${randomBytes(3).toString('hex').toUpperCase()}`;
    const number = `V${randomBytes(6).toString('hex')}`;
    const client = { first_name: 'Ieva', last_name: 'Jankė', date_of_birth: '1991-01-01', id_documents: [{ type: 'passport', number }] };
    const post = async (auth: { authorization: string }, days: number) =>
      (
        await ctx.app.inject({
          method: 'POST',
          url: '/api/v1/claims',
          headers: auth,
          payload: { ...claimBody({ vehicle_registration: plate, claim_date: addDays(ctx.deps.today(), days) }), client },
        })
      ).json().data;
    const target = await post(own.auth, -1);
    const imported = await post(importer.auth, -5);
    // Make the second claim part of an import that is still processing.
    const importId = randomUUID();
    await ctx.deps.db.query(
      `INSERT INTO imports (id, company_id, status, file_name, object_key, size_bytes) VALUES ($1, $2, 'processing', 'x.csv', 'k', 1)`,
      [importId, importer.id],
    );
    await ctx.deps.db.query('UPDATE claims SET import_id = $2 WHERE id = $1', [imported.id, importId]);

    const matches = async () =>
      (await ctx.app.inject({ method: 'GET', url: `/api/v1/claims/${target.id}/matches`, headers: own.auth })).json().data;
    const person = async () =>
      (
        await ctx.app.inject({
          method: 'POST',
          url: '/api/v1/claims/search-by-person',
          headers: own.auth,
          payload: { date_of_birth: '1991-01-01', id_documents: [{ type: 'passport', number }] },
        })
      ).json();
    expect((await matches()).matches).toEqual([]);
    expect((await matches()).indicators.map((i: { name: string }) => i.name)).not.toContain('plate_multi_company');
    expect((await person()).data.map((c: { id: string }) => c.id)).toEqual([target.id]);
    const ownLookups = await ctx.app.inject({ method: 'GET', url: `/api/v1/claims/${imported.id}/lookups`, headers: importer.auth });
    expect(ownLookups.statusCode).toBe(404);

    await ctx.deps.db.query(`UPDATE imports SET status = 'completed' WHERE id = $1`, [importId]);
    expect((await matches()).matches.map((c: { id: string }) => c.id)).toEqual([imported.id]);
    expect((await matches()).indicators.map((i: { name: string }) => i.name)).toContain('plate_multi_company');
    expect((await person()).data.map((c: { id: string }) => c.id)).toEqual([target.id, imported.id]);
  });
});
