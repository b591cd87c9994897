import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { minusYears } from '../../src/domain/dates';
import { addDays, claimBody, createTestContext, submitClaim, type Company, type TestContext } from '../harness';
import { csv, docNumber, plate, postImport, validRow, recordImport } from '../import-helpers';
import { companyWithPeople, signedIn } from '../web/web-client';

/**
 * Match alerts (DECISIONS, "Alerts, batch look-ups and data quality"): made when a claim is stored
 * through the API or the dashboard and when an import completes, one per pair of claims, listed
 * by GET /api/v1/alerts and recorded in the told company's look-up log. Chunks of 2 rows, so an
 * import has several chunks.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ IMPORT_CHUNK_SIZE: '2' });
});
afterAll(async () => ctx?.close());

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/u;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/u;
const today = () => ctx.deps.today();
const get = (company: Company, url: string) => ctx.app.inject({ method: 'GET', url, headers: company.auth });
const alertsOf = async (company: Company, query = '') => {
  const res = await get(company, `/api/v1/alerts${query}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json<{ data: Record<string, unknown>[]; meta: { next_cursor: string | null } }>();
};
const fromDate = () => minusYears(today(), ctx.deps.config.searchHistoryYears);

describe('match alerts for a claim stored through the API', () => {
  it('tells each other company whose claim shares the plate or the person, with the new claim as a plate search shows it', async () => {
    const [first, second, newcomer] = [await ctx.newCompany('First'), await ctx.newCompany('Second'), await ctx.newCompany('Newcomer')];
    const p = plate();
    const person = claimBody();
    const onPlate = await submitClaim(ctx, first, { vehicle_registration: p, claim_date: addDays(today(), -10) });
    const onPerson = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims',
      headers: second.auth,
      payload: person,
    });
    expect(onPerson.statusCode).toBe(201);
    // Neither of the first two was told anything: nothing of another company matched them then.
    expect((await alertsOf(first)).data).toEqual([]);

    const res = await ctx.app.inject({
      method: 'POST',
      url: '/api/v1/claims',
      headers: newcomer.auth,
      payload: { ...claimBody({ vehicle_registration: p.toLowerCase() }), client: person.client },
    });
    expect(res.statusCode, res.body).toBe(201);
    const fresh = res.json().data;

    const [a] = (await alertsOf(first)).data;
    expect(a).toEqual({
      id: expect.stringMatching(UUID),
      kind: 'match',
      claim_id: onPlate.id,
      matched_claim: fresh,
      matched_on: ['vehicle_registration'],
      // Dated 10 and 30 days ago: two incidents.
      same_incident: false,
      created_at: expect.stringMatching(RFC3339),
    });
    expect((await alertsOf(second)).data).toEqual([
      expect.objectContaining({ kind: 'match', claim_id: onPerson.json().data.id, matched_on: ['client'], matched_claim: fresh }),
    ]);
    // The company that stored the claim is told nothing about its own claim.
    expect((await alertsOf(newcomer)).data).toEqual([]);
    expect(a).not.toHaveProperty('from');
  });

  it('makes one alert for a claim that shares both the plate and the person, matched on both', async () => {
    const [first, newcomer] = [await ctx.newCompany('Both, first'), await ctx.newCompany('Both, newcomer')];
    const body = claimBody();
    const res = await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: first.auth, payload: body });
    expect(res.statusCode, res.body).toBe(201);
    const fresh = await submitClaim(ctx, newcomer, { vehicle_registration: body.vehicle_registration, client: body.client });
    expect((await alertsOf(first)).data).toEqual([
      expect.objectContaining({ claim_id: res.json().data.id, matched_claim: fresh, matched_on: ['vehicle_registration', 'client'] }),
    ]);
  });

  it("records each alert in the told company's look-up log, so the new claim's owner sees who was told", async () => {
    const [told, owner] = [await ctx.newCompany('Told'), await ctx.newCompany('Owner')];
    const p = plate();
    await submitClaim(ctx, told, { vehicle_registration: p });
    const fresh = await submitClaim(ctx, owner, { vehicle_registration: p });

    await ctx.deps.lookupJournal.flush();
    expect((await get(told, '/api/v1/lookups')).json().data).toEqual([
      {
        id: expect.stringMatching(UUID),
        kind: 'alert',
        vehicle_registration: p,
        claim_id: fresh.id,
        result_count: 1,
        purpose: null,
        created_at: expect.stringMatching(RFC3339),
      },
    ]);
    expect((await get(owner, `/api/v1/claims/${fresh.id}/lookups`)).json().data).toEqual([
      { company_name: told.name, kind: 'alert', created_at: expect.stringMatching(RFC3339) },
    ]);
    expect((await get(owner, '/api/v1/lookups')).json().data).toEqual([]);
  });

  it('shows alerts among the look-ups newest first, page by page, and leaves out those older than LOOKUP_RETENTION_DAYS, which stay alerts', async () => {
    const [told, owner] = [await ctx.newCompany('Told, log'), await ctx.newCompany('Owner, log')];
    const [p1, p2, searched] = [plate(), plate(), plate()];
    await submitClaim(ctx, told, { vehicle_registration: p1 });
    await submitClaim(ctx, told, { vehicle_registration: p2 });
    const oldBody = claimBody({ vehicle_registration: p1 });
    const stored = await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: owner.auth, payload: oldBody });
    expect(stored.statusCode, stored.body).toBe(201);
    const [old, recent] = [stored.json().data, await submitClaim(ctx, owner, { vehicle_registration: p2 })];
    for (const purpose of ['older search', 'newest search']) {
      const res = await ctx.app.inject({
        method: 'POST',
        url: '/api/v1/claims/search-by-plate',
        headers: told.auth,
        payload: { vehicle_registration: searched, purpose },
      });
      expect(res.statusCode).toBe(200);
    }
    await ctx.deps.lookupJournal.flush();
    const days = ctx.deps.config.lookupRetentionDays;
    const backdate = async (table: 'alerts' | 'lookups', where: string, value: string, daysAgo: number) =>
      ctx.deps.db.query(`UPDATE ${table} SET created_at = now() - make_interval(days => $2) WHERE ${where} = $1`, [value, daysAgo]);
    await backdate('alerts', 'matched_claim_id', old.id, days + 1);
    await backdate('lookups', 'purpose', 'older search', 10);
    await backdate('alerts', 'matched_claim_id', recent.id, 5);

    const seen: string[] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const res = await get(told, `/api/v1/lookups?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json<{
        data: { kind: string; purpose: string | null; claim_id: string | null }[];
        meta: { next_cursor: string | null };
      }>();
      seen.push(...body.data.map((l) => (l.kind === 'alert' ? `alert on ${l.claim_id}` : `${l.purpose}`)));
      cursor = body.meta.next_cursor;
    }
    expect(seen).toEqual(['newest search', `alert on ${recent.id}`, 'older search']);
    expect((await get(owner, `/api/v1/claims/${old.id}/lookups`)).json().data).toEqual([]);
    expect((await get(owner, `/api/v1/claims/${recent.id}/lookups`)).json().data).toEqual([
      { company_name: told.name, kind: 'alert', created_at: expect.stringMatching(RFC3339) },
    ]);
    // Nor does subject access list it among the look-ups that returned the person's claim.
    const subject = await ctx.deps.registry.subjectExport({
      dateOfBirth: oldBody.client.date_of_birth,
      idType: oldBody.client.id_documents[0]!.type,
      idNumber: oldBody.client.id_documents[0]!.number,
    });
    expect(subject.claims.map((c) => c.id)).toEqual([old.id]);
    expect(subject.lookups).toEqual([]);
    // The alert itself is not a look-up: it is listed as long as its claims are kept.
    expect((await alertsOf(told)).data.map((a) => (a.matched_claim as { id: string }).id)).toEqual([recent.id, old.id]);
  });

  it('makes none for claims of the same company, nor for claims outside the search window', async () => {
    const company = await ctx.newCompany('Alone');
    const p = plate();
    await submitClaim(ctx, company, { vehicle_registration: p });
    await submitClaim(ctx, company, { vehicle_registration: p });
    expect((await alertsOf(company)).data).toEqual([]);

    // A claim dated before the window (the window moved on since it was stored) is not told.
    const [old, later] = [await ctx.newCompany('Old'), await ctx.newCompany('Later')];
    const q = plate();
    const stale = await submitClaim(ctx, old, { vehicle_registration: q });
    await ctx.deps.db.query(`UPDATE claims SET claim_date = ($2::date - 1) WHERE id = $1`, [stale.id, fromDate()]);
    await submitClaim(ctx, later, { vehicle_registration: q });
    expect((await alertsOf(old)).data).toEqual([]);
  });

  it('makes one alert per pair of claims, however often the same claims are alerted again', async () => {
    const [a, b] = [await ctx.newCompany('Pair A'), await ctx.newCompany('Pair B')];
    const p = plate();
    const mine = await submitClaim(ctx, a, { vehicle_registration: p });
    const theirs = await submitClaim(ctx, b, { vehicle_registration: p });
    for (const ids of [[theirs.id], [mine.id], [theirs.id, mine.id]]) {
      expect(await ctx.deps.repos.transaction((tx) => tx.alerts.matchClaims(ids, fromDate()))).toBe(0);
    }
    expect((await alertsOf(a)).data).toHaveLength(1);
    expect((await alertsOf(b)).data).toEqual([]);
  });
});

describe('match alerts for a claim entered in the dashboard', () => {
  it('tells the other company as for an API claim (source assisted)', async () => {
    const told = await ctx.newCompany('Told by dashboard');
    const c = await companyWithPeople(ctx, 'Dashboard user');
    const p = plate();
    const mine = await submitClaim(ctx, told, { vehicle_registration: p });
    const web = await signedIn(ctx, c.member.email);
    await web.get('/claims/new');
    const res = await web.post('/claims', {
      'client.first_name': 'Ona',
      'client.last_name': 'Petraitė',
      'client.date_of_birth': '1985-06-02',
      'client.id_documents.0.type': 'passport',
      'client.id_documents.0.number': docNumber(),
      'client.id_documents.1.type': '',
      'client.id_documents.1.number': '',
      claim_date: today(),
      vehicle_registration: p,
      claim_type: 'theft',
      amount: '10',
      is_at_fault: 'false',
      status: 'filed',
    });
    expect(res.statusCode, res.body).toBe(303);
    expect((await alertsOf(told)).data).toEqual([
      expect.objectContaining({
        claim_id: mine.id,
        matched_claim: expect.objectContaining({ source: 'assisted', company_name: c.name }),
      }),
    ]);
  });
});

describe('match alerts for an import', () => {
  it('are made when the import completes, one per pair, and none again when its completion runs again', async () => {
    const [told, importer] = [await ctx.newCompany('Told by import'), await ctx.newCompany('Importer')];
    const plates = [plate(), plate(), plate()];
    const mine = [];
    for (const p of plates) mine.push(await submitClaim(ctx, told, { vehicle_registration: p }));
    const rows = [...plates.map((p) => validRow({ vehicle_registration: p })), validRow(), validRow({ vehicle_registration: plates[0] })];
    const id = await recordImport(ctx, importer, csv(rows));
    let seenWhileRunning: number | undefined;
    const outcome = await ctx.deps.imports.process(id, {
      onProgress: async (p) => {
        // Between chunks the written claims are invisible, and nobody is told of them yet.
        if (p.rows_done === 2) seenWhileRunning = (await alertsOf(told)).data.length;
      },
    });
    expect(outcome).toMatchObject({ status: 'completed', imported: 5 });
    expect(seenWhileRunning).toBe(0);
    const { data } = await alertsOf(told);
    expect(data).toHaveLength(4);
    expect(data.map((a) => a.claim_id).sort()).toEqual([mine[0].id, mine[0].id, mine[1].id, mine[2].id].sort());
    expect(data.every((a) => (a.matched_claim as { source: string }).source === 'bulk_import')).toBe(true);

    // The job again (a retry after its last chunk), and the import's alert statement again: nothing new.
    expect(await ctx.deps.imports.process(id)).toMatchObject({ status: 'completed', alreadyDone: true });
    expect(await ctx.deps.repos.transaction((tx) => tx.alerts.matchImport(id, fromDate()))).toBe(0);
    expect((await alertsOf(told)).data).toHaveLength(4);
    await ctx.deps.lookupJournal.flush();
    expect((await get(told, '/api/v1/lookups?limit=100')).json().data.filter((l: { kind: string }) => l.kind === 'alert')).toHaveLength(4);
  });

  it('are made through the import endpoint too', async () => {
    const [told, importer] = [await ctx.newCompany('Told by endpoint'), await ctx.newCompany('Endpoint importer')];
    const p = plate();
    const mine = await submitClaim(ctx, told, { vehicle_registration: p });
    const res = await postImport(ctx.app, importer.auth, csv([validRow({ vehicle_registration: p })]));
    expect(res.statusCode, res.body).toBe(200);
    expect((await alertsOf(told)).data).toEqual([expect.objectContaining({ claim_id: mine.id, matched_on: ['vehicle_registration'] })]);
  });

  it('are never made for a cancelled or a failed import', async () => {
    const [told, importer] = [await ctx.newCompany('Told never'), await ctx.newCompany('Importer never')];
    const p = plate();
    await submitClaim(ctx, told, { vehicle_registration: p });
    const rows = [validRow({ vehicle_registration: p }), validRow({ vehicle_registration: p }), validRow({ vehicle_registration: p })];

    const cancelled = await recordImport(ctx, importer, csv(rows));
    const outcome = await ctx.deps.imports.process(cancelled, {
      onProgress: async (pr) => {
        if (pr.rows_done === 2) {
          await ctx.app.inject({ method: 'POST', url: `/api/v1/imports/${cancelled}/cancel`, headers: importer.auth });
        }
      },
    });
    expect(outcome.status).toBe('cancelled');

    const failed = await recordImport(ctx, importer, csv(rows));
    await expect(
      ctx.deps.imports.process(failed, {
        onProgress: async () => {
          throw new Error('boom');
        },
      }),
    ).rejects.toThrow('boom');
    await ctx.deps.imports.markFailed(failed, 'error', 'The import could not be completed; nothing was imported. Try again later.');

    expect((await alertsOf(told)).data).toEqual([]);
  });
});

describe('GET /api/v1/alerts', () => {
  it('pages newest first with limit and cursor, filters by claim_id, and shows each company only its own', async () => {
    const [told, other, stranger] = [await ctx.newCompany('Pages'), await ctx.newCompany('Pages other'), await ctx.newCompany('Stranger')];
    const [p, q] = [plate(), plate()];
    const mineP = await submitClaim(ctx, told, { vehicle_registration: p });
    const mineQ = await submitClaim(ctx, told, { vehicle_registration: q });
    const made = [];
    for (const v of [p, q, p]) made.push(await submitClaim(ctx, other, { vehicle_registration: v }));

    const first = await alertsOf(told, '?limit=2');
    expect(first.data.map((a) => (a.matched_claim as { id: string }).id)).toEqual([made[2].id, made[1].id]);
    expect(first.meta.next_cursor).toEqual(expect.any(String));
    const second = await alertsOf(told, `?limit=2&cursor=${encodeURIComponent(first.meta.next_cursor!)}`);
    expect(second.data.map((a) => (a.matched_claim as { id: string }).id)).toEqual([made[0].id]);
    expect(second.meta.next_cursor).toBeNull();

    expect((await alertsOf(told, `?claim_id=${mineQ.id}`)).data.map((a) => a.claim_id)).toEqual([mineQ.id]);
    expect((await alertsOf(told, `?claim_id=${mineP.id}`)).data).toHaveLength(2);
    // Another company's claim id, or another company's token: nothing of theirs.
    expect((await alertsOf(other, `?claim_id=${mineP.id}`)).data).toEqual([]);
    expect((await alertsOf(stranger)).data).toEqual([]);
    expect((await alertsOf(told, '?limit=100')).data).toHaveLength(3);
  });

  it('answers 422 for a bad limit, cursor or claim_id, and 401 without a token', async () => {
    const company = await ctx.newCompany('Bad query');
    for (const q of ['?limit=0', '?limit=101', '?cursor=nonsense', '?claim_id=not-a-uuid']) {
      const res = await get(company, `/api/v1/alerts${q}`);
      expect(res.statusCode, q).toBe(422);
      expect(res.json().code).toBe('validation_failed');
    }
    expect((await ctx.app.inject({ method: 'GET', url: '/api/v1/alerts' })).statusCode).toBe(401);
  });
});
