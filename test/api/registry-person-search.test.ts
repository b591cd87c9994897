import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { addDays, claimBody, createTestContext, type Company, type TestContext } from '../harness';
import { plate } from '../import-helpers';

const newNumber = () => `${randomBytes(6).toString('hex').toUpperCase()}`;

const byPerson = (ctx: TestContext, company: Company, payload: unknown) =>
  ctx.app.inject({ method: 'POST', url: '/api/v1/claims/search-by-person', headers: company.auth, payload: payload as object });

async function submit(ctx: TestContext, company: Company, client: Record<string, unknown>, overrides: Record<string, unknown> = {}) {
  const res = await ctx.app.inject({
    method: 'POST',
    url: '/api/v1/claims',
    headers: company.auth,
    payload: { ...claimBody(overrides), client },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().data;
}

describe('POST /api/v1/claims/search-by-person', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(async () => ctx.close());
  const today = () => ctx.deps.today();
  const person = (number: string) => ({
    first_name: 'Jonas',
    last_name: 'Jonaitis',
    date_of_birth: '1990-02-03',
    id_documents: [{ type: 'passport', number }],
  });

  it("finds the person's claims of all companies, newest first, in the plate search's shape and meta", async () => {
    const [a, b, searcher] = [await ctx.newCompany('A'), await ctx.newCompany('B'), await ctx.newCompany('Searcher')];
    const number = newNumber();
    const older = await submit(ctx, a, person(number), { vehicle_registration: plate(), claim_date: addDays(today(), -50) });
    const newer = await submit(ctx, b, person(number), { vehicle_registration: plate(), claim_date: addDays(today(), -5) });
    await submit(ctx, b, person(newNumber()), { vehicle_registration: plate() }); // someone else
    const res = await byPerson(ctx, searcher, { date_of_birth: '1990-02-03', id_documents: [{ type: 'passport', number }] });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ data: [newer, older], meta: { total_claims: 2, query_period: '3 years' } });
  });

  it('normalizes the document number as a submission does (country prefix, case, spaces)', async () => {
    const a = await ctx.newCompany();
    const number = newNumber();
    const claim = await submit(ctx, a, person(number));
    const spelled = `lt-${number.slice(0, 4).toLowerCase()} ${number.slice(4)}`;
    const res = await byPerson(ctx, a, { date_of_birth: '1990-02-03', id_documents: [{ type: 'passport', number: spelled }] });
    expect(res.json().data.map((c: { id: string }) => c.id)).toEqual([claim.id]);
  });

  it('finds the person by any one of their documents, and not by a document of another type with the same number', async () => {
    const a = await ctx.newCompany();
    const [passport, nationalId] = [newNumber(), newNumber()];
    const claim = await submit(ctx, a, {
      ...person(passport),
      id_documents: [
        { type: 'passport', number: passport },
        { type: 'national_id', number: nationalId },
      ],
    });
    const one = await byPerson(ctx, a, { date_of_birth: '1990-02-03', id_documents: [{ type: 'national_id', number: nationalId }] });
    expect(one.json().data.map((c: { id: string }) => c.id)).toEqual([claim.id]);
    const wrongType = await byPerson(ctx, a, {
      date_of_birth: '1990-02-03',
      id_documents: [{ type: 'alien_registration', number: passport }],
    });
    expect(wrongType.json().data).toEqual([]);
  });

  it('an unknown document, another date of birth, and documents of two different persons all give 200 with an empty list', async () => {
    const a = await ctx.newCompany();
    const [n1, n2] = [newNumber(), newNumber()];
    await submit(ctx, a, person(n1));
    await submit(ctx, a, { ...person(n2), id_documents: [{ type: 'national_id', number: n2 }] });
    const empty = { data: [], meta: { total_claims: 0, query_period: '3 years' } };
    for (const payload of [
      { date_of_birth: '1990-02-03', id_documents: [{ type: 'passport', number: newNumber() }] },
      { date_of_birth: '1990-02-04', id_documents: [{ type: 'passport', number: n1 }] },
      {
        date_of_birth: '1990-02-03',
        id_documents: [
          { type: 'passport', number: n1 },
          { type: 'national_id', number: n2 },
        ],
      },
    ]) {
      const res = await byPerson(ctx, a, payload);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual(empty);
    }
  });

  it('leaves out claims dated before the search window', async () => {
    const short = await createTestContext({ SEARCH_HISTORY_YEARS: '1' });
    try {
      const a = await short.newCompany();
      const number = newNumber();
      const inside = await submit(short, a, person(number), { claim_date: addDays(short.deps.today(), -300) });
      await submit(short, a, person(number), { claim_date: addDays(short.deps.today(), -400) });
      const res = await byPerson(short, a, { date_of_birth: '1990-02-03', id_documents: [{ type: 'passport', number }] });
      expect(res.json()).toEqual({ data: [inside], meta: { total_claims: 1, query_period: '1 year' } });
    } finally {
      await short.close();
    }
  });

  it('validates: 422 naming date_of_birth, id_documents, the document fields and purpose', async () => {
    const a = await ctx.newCompany();
    const cases: [unknown, Record<string, string[]>][] = [
      [{ id_documents: [{ type: 'passport', number: 'X1' }] }, { date_of_birth: ['The date of birth field is required.'] }],
      [
        { date_of_birth: '1990-02-30', id_documents: [{ type: 'passport', number: 'X1' }] },
        { date_of_birth: ['The date of birth is not a date in the calendar: February 1990 has 28 days.'] },
      ],
      [{ date_of_birth: '1990-02-03' }, { id_documents: ['The id documents field is required.'] }],
      [{ date_of_birth: '1990-02-03', id_documents: [] }, { id_documents: ['The id documents field must have at least 1 item.'] }],
      [
        { date_of_birth: '1990-02-03', id_documents: [{ type: 'visa', number: 'X1' }] },
        { 'id_documents.0.type': ['The document type field must be one of: passport, national_id, alien_registration.'] },
      ],
      [
        { date_of_birth: '1990-02-03', id_documents: [{ type: 'passport', number: 'LT-' }] },
        { 'id_documents.0.number': ['The document number must contain more than a country prefix.'] },
      ],
      [
        { date_of_birth: '1990-02-03', id_documents: [{ type: 'passport', number: 'X1' }], purpose: 'p'.repeat(201) },
        { purpose: ['The purpose field must not be greater than 200 characters.'] },
      ],
    ];
    for (const [payload, errors] of cases) {
      const res = await byPerson(ctx, a, payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(422);
      expect(res.json().errors, JSON.stringify(payload)).toEqual(errors);
    }
  });

  it('never echoes the document number, in the answer or in the look-up log', async () => {
    const a = await ctx.newCompany();
    const number = newNumber();
    await submit(ctx, a, person(number));
    const res = await byPerson(ctx, a, { date_of_birth: '1990-02-03', id_documents: [{ type: 'passport', number }] });
    expect(res.body).not.toContain(number);
    const log = await ctx.app.inject({ method: 'GET', url: '/api/v1/lookups', headers: a.auth });
    expect(log.body).not.toContain(number);
    expect(log.json().data[0]).toMatchObject({ kind: 'person_search', vehicle_registration: null, claim_id: null, result_count: 1 });
  });
});
