import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { claimBody, createTestContext, type TestContext, addDays, type Company } from '../harness';
import { csv, postImport, validRow, docNumber } from '../import-helpers';

// Meaningful mainly on PostgreSQL, where the submissions really run in parallel on a pool of
// connections; on PGlite the same tests pin the result of one connection taking them in turn.
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx.close());

type Doc = { type: string; number: string };

const post = (company: Company, client: { date_of_birth: string; id_documents: Doc[] }, plate?: string) =>
  ctx.app.inject({
    method: 'POST',
    url: '/api/v1/claims',
    headers: company.auth,
    payload: claimBody({ claim_date: addDays(ctx.deps.today(), -2), ...(plate ? { vehicle_registration: plate } : {}) }, client),
  });

async function claimsWithPlate(company: Company, plate: string) {
  const res = await ctx.app.inject({
    method: 'POST',
    url: '/api/v1/claims/search-by-plate',
    headers: company.auth,
    payload: { vehicle_registration: plate },
  });
  return res.json().data as { client: { id: string; date_of_birth: string } }[];
}

describe('identity resolution under concurrent submissions', () => {
  it('creates exactly one client for 50 parallel submissions of the same new person', async () => {
    const companies = await Promise.all([ctx.newCompany(), ctx.newCompany(), ctx.newCompany()]);
    const number = docNumber('C');
    const plate = `K${randomBytes(4).toString('hex').toUpperCase()}`;
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        post(companies[i % 3]!, { date_of_birth: '1975-04-04', id_documents: [{ type: 'passport', number }] }, plate),
      ),
    );
    expect(responses.map((r) => r.statusCode)).toEqual(Array(50).fill(201));
    const clientIds = new Set(responses.map((r) => r.json().data.client.id));
    expect(clientIds.size).toBe(1);
    // Every claim was stored once, all on that one client.
    const stored = await claimsWithPlate(companies[0], plate);
    expect(stored).toHaveLength(50);
    expect(new Set(stored.map((c) => c.client.id))).toEqual(clientIds);
  });

  it('creates one client when parallel submissions of a new person carry different document sets', async () => {
    const company = await ctx.newCompany();
    const passport = docNumber('C');
    const extras = Array.from({ length: 12 }, () => ({ type: 'national_id', number: docNumber('C') }));
    const responses = await Promise.all(
      extras.map((extra, i) =>
        post(company, {
          date_of_birth: '1982-02-02',
          id_documents: i % 2 === 0 ? [{ type: 'passport', number: passport }, extra] : [extra, { type: 'passport', number: passport }],
        }),
      ),
    );
    expect(responses.map((r) => r.statusCode)).toEqual(Array(extras.length).fill(201));
    expect(new Set(responses.map((r) => r.json().data.client.id)).size).toBe(1);
  });

  it('never loses a document when parallel submissions add different new documents to one existing person', async () => {
    const company = await ctx.newCompany();
    const passport = docNumber('C');
    const first = await post(company, { date_of_birth: '1990-09-09', id_documents: [{ type: 'passport', number: passport }] });
    expect(first.statusCode).toBe(201);
    const clientId = first.json().data.client.id;

    const added: Doc[] = Array.from({ length: 20 }, (_, i) => ({
      type: i % 2 === 0 ? 'national_id' : 'alien_registration',
      number: docNumber('C'),
    }));
    const responses = await Promise.all(
      added.map((doc) => post(company, { date_of_birth: '1990-09-09', id_documents: [{ type: 'passport', number: passport }, doc] })),
    );
    expect(responses.map((r) => r.statusCode)).toEqual(Array(added.length).fill(201));
    expect(new Set(responses.map((r) => r.json().data.client.id))).toEqual(new Set([clientId]));

    // Every added document now resolves, alone, to the same person, who lists all three types.
    const checks = await Promise.all(added.map((doc) => post(company, { date_of_birth: '1990-09-09', id_documents: [doc] })));
    for (const res of checks) {
      expect(res.statusCode).toBe(201);
      expect(res.json().data.client.id).toBe(clientId);
    }
    const again = await post(company, { date_of_birth: '1990-09-09', id_documents: [{ type: 'passport', number: passport }] });
    expect(again.json().data.client.id_documents).toEqual([{ type: 'alien_registration' }, { type: 'national_id' }, { type: 'passport' }]);
  });

  it('creates one client when parallel submissions race with different dates of birth, and rejects the mismatching ones', async () => {
    const company = await ctx.newCompany();
    const number = docNumber('C');
    const plate = `D${randomBytes(4).toString('hex').toUpperCase()}`;
    const dobs = Array.from({ length: 30 }, (_, i) => (i % 2 === 0 ? '1960-01-01' : '1961-01-01'));
    const responses = await Promise.all(
      dobs.map((dob) => post(company, { date_of_birth: dob, id_documents: [{ type: 'passport', number }] }, plate)),
    );

    const ok = responses.filter((r) => r.statusCode === 201);
    const rejected = responses.filter((r) => r.statusCode === 422);
    expect(ok.length + rejected.length).toBe(dobs.length);
    expect(ok.length).toBeGreaterThan(0);
    expect(new Set(ok.map((r) => r.json().data.client.id)).size).toBe(1);

    // The winner's date of birth is the one on record; exactly the other date was rejected.
    const recorded = ok[0]!.json().data.client.date_of_birth as string;
    expect(ok.every((r) => r.json().data.client.date_of_birth === recorded)).toBe(true);
    expect(ok.length).toBe(dobs.filter((d) => d === recorded).length);
    for (const res of rejected) expect(Object.keys(res.json().errors)).toEqual(['client.date_of_birth']);

    // Only the accepted submissions stored a claim.
    const stored = await claimsWithPlate(company, plate);
    expect(stored).toHaveLength(ok.length);
    expect(stored.every((c) => c.client.date_of_birth === recorded)).toBe(true);
  });
});

describe('an import racing API submissions of the same new persons', () => {
  it('imports every row and leaves one client per person, whoever creates the person first', async () => {
    const company = await ctx.newCompany('Import race');
    const persons = Array.from({ length: 400 }, () => ({ number: docNumber('C'), dob: '1980-02-03' }));
    const file = csv(persons.map((p) => validRow({ id_number: p.number, date_of_birth: p.dob })));
    // The API submissions go on while the import runs; whichever creates a person first, the
    // other finds it. (This checks the end state; it does not force the narrow race in which a
    // chunk's write loses to a submission committed after its look-up.)
    const importing = postImport(ctx.app, company.auth, file);
    const submitted: Awaited<ReturnType<typeof post>>[] = [];
    for (let i = 0; i < persons.length; i += 50) {
      const batch = persons.slice(i, i + 50);
      submitted.push(
        ...(await Promise.all(
          batch.map((p) => post(company, { date_of_birth: p.dob, id_documents: [{ type: 'passport', number: p.number }] })),
        )),
      );
    }
    const imported = await importing;
    expect(imported.statusCode, imported.body).toBe(200);
    expect(imported.json()).toMatchObject({ imported: 400, failed: 0 });
    expect(submitted.filter((r) => r.statusCode !== 201).map((r) => r.body)).toEqual([]);
    const [row] = await ctx.deps.db.query<{ claims: number; clients: number }>(
      'SELECT count(*)::int AS claims, count(DISTINCT client_id)::int AS clients FROM claims WHERE company_id = $1',
      [company.id],
    );
    expect(row).toEqual({ claims: 800, clients: 400 });
  });
});
