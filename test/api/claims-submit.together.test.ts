import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import {
  addDays,
  apiError,
  claimBody,
  createTestContext,
  dbKind,
  docNumber,
  submitClaim,
  type Company,
  type TestContext,
} from '../harness';
import { plate } from '../import-helpers';

/**
 * Claims submitted at the same time are written together (group commit: those that arrive while
 * one write runs go as the next, in one statement). Each is still answered as if submitted on its
 * own, one after the other in arrival order: the alerts between them, a person one creates and
 * the next finds, an error that is that submission's alone.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx?.close());

const today = () => ctx.deps.today();
const post = (company: Company, payload: Record<string, unknown>) =>
  ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload });
const alertsOf = async (company: Company) => {
  const res = await ctx.app.inject({ method: 'GET', url: '/api/v1/alerts?limit=100', headers: company.auth });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<{ data: { claim_id: string; matched_claim: { id: string }; matched_on: string[] }[] }>().data;
};
const ownClaims = async (company: Company) => {
  const res = await ctx.app.inject({ method: 'GET', url: '/api/v1/claims?limit=100', headers: company.auth });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<{ data: { id: string; vehicle_registration: string }[] }>().data;
};

describe(`claims submitted at the same time (${dbKind()})`, () => {
  it('make one alert per pair of claims of two companies, as if submitted one after the other', async () => {
    const [a, b] = [await ctx.newCompany('Together A'), await ctx.newCompany('Together B')];
    const p = plate();
    // Sent at once, alternating: the first is written alone, the others together while it runs.
    const sent = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        post(i % 2 === 0 ? a : b, claimBody({ vehicle_registration: p, claim_date: addDays(today(), -5) })),
      ),
    );
    for (const res of sent) expect(res.statusCode, res.body).toBe(201);
    const ids = sent.map((res) => res.json<{ data: { id: string } }>().data.id);
    const ofA = new Set(ids.filter((_, i) => i % 2 === 0));
    const ofB = new Set(ids.filter((_, i) => i % 2 === 1));

    const told = [...(await alertsOf(a)), ...(await alertsOf(b))];
    // Every pair of an A claim and a B claim once: 6 × 6, each told to the company of one of them.
    expect(told).toHaveLength(36);
    const pairs = new Set<string>();
    for (const alert of told) {
      const own = ofA.has(alert.claim_id) ? ofA : ofB;
      expect(own.has(alert.claim_id)).toBe(true);
      expect(own.has(alert.matched_claim.id)).toBe(false);
      expect(alert.matched_on).toEqual(['vehicle_registration']);
      pairs.add([alert.claim_id, alert.matched_claim.id].sort().join());
    }
    expect(pairs.size).toBe(36);
  });

  it('resolve a person that one of them creates for the next, as one person', async () => {
    const [a, b] = [await ctx.newCompany('Person A'), await ctx.newCompany('Person B')];
    const person = claimBody().client;
    const sent = await Promise.all([a, b, a, b, a].map((company) => post(company, { ...claimBody(), client: person })));
    for (const res of sent) expect(res.statusCode, res.body).toBe(201);
    const clients = new Set(sent.map((res) => res.json<{ data: { client: { id: string } } }>().data.client.id));
    expect(clients.size).toBe(1);
    // B's two claims are each told to A about A's earlier ones, and the other way round: one per pair.
    const told = [...(await alertsOf(a)), ...(await alertsOf(b))];
    expect(told).toHaveLength(6);
    for (const alert of told) expect(alert.matched_on).toEqual(['client']);
  });

  it("answer each with its person's documents as stored, when an earlier one gave the person another document", async () => {
    const company = await ctx.newCompany('Documents');
    const person = claimBody({}, { id_documents: [{ type: 'national_id', number: docNumber() }] }).client;
    expect((await post(company, { ...claimBody(), client: person })).statusCode).toBe(201);
    const passport = { type: 'passport', number: docNumber() };
    // The first adds a passport to the person; the others, sent with it, give only the first
    // document: each is written after the first, so each answers both documents, as a read does.
    const sent = await Promise.all([
      post(company, { ...claimBody(), client: { ...person, id_documents: [...person.id_documents, passport] } }),
      ...Array.from({ length: 6 }, () => post(company, { ...claimBody(), client: person })),
    ]);
    for (const res of sent) {
      expect(res.statusCode, res.body).toBe(201);
      const answered = res.json<{ data: { id: string; client: { id_documents: { type: string }[] } } }>().data;
      expect(answered.client.id_documents.map((d) => d.type)).toEqual(['national_id', 'passport']);
      const read = await ctx.app.inject({ method: 'GET', url: `/api/v1/claims/${answered.id}`, headers: company.auth });
      expect(read.json<{ data: unknown }>().data).toEqual(answered);
    }
  });

  it('answer a submission whose person cannot be resolved its own error, and store the others', async () => {
    const company = await ctx.newCompany('Mixed');
    const known = claimBody();
    await submitClaim(ctx, company, { client: known.client });
    const bodies = [claimBody(), claimBody(), { ...claimBody(), client: { ...known.client, date_of_birth: '1970-01-01' } }, claimBody()];
    const sent = await Promise.all(bodies.map((body) => post(company, body)));
    expect(sent.map((res) => res.statusCode)).toEqual([201, 201, 422, 201]);
    expect(sent[2]!.json()).toEqual(apiError('validation_failed', expect.any(String), { 'client.date_of_birth': [expect.any(String)] }));
    const stored = (await ownClaims(company)).map((c) => c.vehicle_registration);
    expect(stored).toHaveLength(4);
    expect(stored).not.toContain(bodies[2]!.vehicle_registration);
  });

  it('fail only the submission the database refuses, and store the others sent with it', async () => {
    const company = await ctx.newCompany('Refused');
    const refused = plate();
    // A claim the database itself refuses (as a constraint would), whatever the batch around it.
    await ctx.deps.db.exec(`
      CREATE FUNCTION refuse_claim() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'refused by the test' USING ERRCODE = 'check_violation'; END $$;
      CREATE TRIGGER refuse_claim BEFORE INSERT ON claims FOR EACH ROW
        WHEN (NEW.vehicle_registration = '${refused}') EXECUTE FUNCTION refuse_claim();`);
    try {
      const bodies = [claimBody(), claimBody(), claimBody({ vehicle_registration: refused }), claimBody(), claimBody()];
      const sent = await Promise.all(bodies.map((body) => post(company, body)));
      expect(sent.map((res) => res.statusCode)).toEqual([201, 201, 500, 201, 201]);
      expect(sent[2]!.body).not.toContain('refused by the test');
      const stored = (await ownClaims(company)).map((c) => c.vehicle_registration);
      expect(stored.sort()).toEqual(
        bodies
          .filter((_, i) => i !== 2)
          .map((b) => b.vehicle_registration)
          .sort(),
      );
    } finally {
      await ctx.deps.db.exec(`DROP TRIGGER refuse_claim ON claims; DROP FUNCTION refuse_claim();`);
    }
  });
});
