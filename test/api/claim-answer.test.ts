import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { claimSchema, clientSchema } from '../../src/api/schemas/claims';
import { CLAIM_FIELDS, CLIENT_FIELDS, claimInputSchema } from '../../src/domain/claims/claim-schema';
import type { Claim } from '../../src/domain/claims/claim';
import { EXPORT_COLUMNS } from '../../src/web/claims-export';
import { claimBody, companyPrincipal, createTestContext, type Company, type TestContext } from '../harness';
import { companyWithPeople, signedIn } from '../web/web-client';

/**
 * The claim as answered is declared once (claim-schema.ts, claimAnswerSchema); every surface's
 * answer is derived from it. Each derivation is checked here against the declaration: a field
 * missing from any of them (or out of order, or with another value) fails.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ APP_TIMEZONE: 'UTC' });
});
afterAll(async () => ctx.close());

/** The field names of a claim and of its client, in their order. */
const shape = (claim: Claim) => ({ claim: Object.keys(claim), client: Object.keys(claim.client) });
const DECLARED = { claim: [...CLAIM_FIELDS], client: [...CLIENT_FIELDS] };

const post = (company: Company, url: string, payload: object) => ctx.app.inject({ method: 'POST', url, headers: company.auth, payload });
const get = (company: Company, url: string) => ctx.app.inject({ method: 'GET', url, headers: company.auth });

describe('the claim as answered, declared once', () => {
  it("the API's Claim and Client schemas, and the published document's, have the declared fields in order, all required", async () => {
    expect(Object.keys(claimSchema.properties)).toEqual(DECLARED.claim);
    expect([...claimSchema.required]).toEqual(DECLARED.claim);
    expect(Object.keys(clientSchema.properties)).toEqual(DECLARED.client);
    expect([...clientSchema.required]).toEqual(DECLARED.client);
    const doc = (await ctx.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<{
      components: { schemas: Record<string, { properties: object; required: string[] }> };
    }>();
    expect(Object.keys(doc.components.schemas.Claim!.properties)).toEqual(DECLARED.claim);
    expect(doc.components.schemas.Claim!.required).toEqual(DECLARED.claim);
    expect(Object.keys(doc.components.schemas.Client!.properties)).toEqual(DECLARED.client);
  });

  it('the CSV export has a column for every answer field the import takes', () => {
    const input = claimInputSchema.properties;
    const importable = [
      ...DECLARED.claim.filter((f) => f !== 'client' && f in input),
      ...DECLARED.client.filter((f) => f !== 'id_documents' && f in input.client.properties),
    ];
    expect(importable).toContain('is_at_fault');
    expect(EXPORT_COLUMNS).toEqual(expect.arrayContaining(importable));
  });

  it('every reader answers the same claim: the write, the own reads, both searches, matches, alerts and the export', async () => {
    const owner = await companyWithPeople(ctx);
    const other = await ctx.newCompany();
    const body = claimBody({ amount: '12.5', is_at_fault: true, status: 'settled', claim_type: 'theft' });
    body.client.id_documents.push({ type: 'national_id', number: `N${body.client.id_documents[0]!.number}` });

    // The claim just written (claim-service.ts shownClaim), as the domain returns it, unserialized.
    const written = await ctx.deps.claims.submit(companyPrincipal(owner), body);
    expect(shape(written)).toEqual(DECLARED);
    expect(written).toMatchObject({ amount: '12.50', is_at_fault: true, status: 'settled', claim_type: 'theft', source: 'api' });
    expect(written.client.id_documents).toEqual([{ type: 'national_id' }, { type: 'passport' }]);

    // The readers of the repository's row mapping (claim-columns.ts claimOfRow), unserialized.
    const own = await ctx.deps.claims.get(companyPrincipal(owner), written.id);
    expect(shape(own)).toEqual(DECLARED);
    expect(own).toEqual(written);
    const listed = (await ctx.deps.claims.list(companyPrincipal(owner), { limit: 5 })).data;
    expect(listed.map(shape)).toEqual([DECLARED]);
    expect(listed).toEqual([written]);
    const found = (await ctx.deps.claims.searchByPlate(companyPrincipal(other), written.vehicle_registration)).data;
    expect(found.map(shape)).toEqual([DECLARED]);
    expect(found).toEqual([written]);

    // Over the API: the same, and the readers of the SQL JSON projection (claim-columns.ts claimJson).
    const answers = [
      (await get(owner, `/api/v1/claims/${written.id}`)).json<{ data: Claim }>().data,
      (await post(other, '/api/v1/claims/search-by-plate', { vehicle_registration: written.vehicle_registration })).json<{
        data: Claim[];
      }>().data[0],
      (
        await post(other, '/api/v1/claims/search-by-person', {
          date_of_birth: body.client.date_of_birth,
          id_documents: body.client.id_documents,
        })
      ).json<{ data: Claim[] }>().data[0],
    ];
    expect(answers).toEqual([written, written, written]);
    // Another company's claim on the same plate: a match of the owner's claim, and an alert to the owner.
    const theirs = await ctx.deps.claims.submit(
      companyPrincipal(other),
      claimBody({ vehicle_registration: written.vehicle_registration, amount: null, is_at_fault: false }),
    );
    const matches = (await get(owner, `/api/v1/claims/${written.id}/matches`)).json<{
      data: { matches: (Claim & { matched_on: string[] })[] };
    }>().data.matches;
    expect(matches.map(({ matched_on: _on, ...claim }) => claim)).toEqual([theirs]);
    const alerts = (await get(owner, `/api/v1/alerts?claim_id=${written.id}`)).json<{ data: { matched_claim: Claim }[] }>().data;
    expect(alerts.map((a) => a.matched_claim)).toEqual([theirs]);

    // The dashboard's CSV export: each column that is an answer field holds that field.
    const web = await signedIn(ctx, owner.member.email);
    const csv = await web.get(`/claims/export.csv?plate=${written.vehicle_registration}`);
    const [header, row, ...rest] = csv.body
      .replace(/^\uFEFF/u, '')
      .trim()
      .split('\n');
    expect(rest).toEqual([]);
    const cells = Object.fromEntries(header!.split(',').map((c, i) => [c, row!.split(',')[i]]));
    const expected = { ...written.client, ...written } as Record<string, unknown>;
    for (const column of EXPORT_COLUMNS.filter((c) => c in expected))
      expect([column, cells[column]]).toEqual([column, String(expected[column])]);
  });
});
