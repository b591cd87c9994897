import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { minusYears, todayIn } from '../../src/domain/dates';
import { claimBody, createTestContext, type TestContext, addDays, type Company } from '../harness';
import { docNumber } from '../import-helpers';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx.close());

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const today = () => ctx.deps.today();

/** A valid body with a claim date a month ago (claimBody's fixed date would age out of the 3-year window). */
const body = (overrides: Record<string, unknown> = {}, client: Record<string, unknown> = {}) =>
  claimBody({ claim_date: addDays(today(), -30), ...overrides }, client);

async function submit(company: Company, payload: unknown) {
  const res = await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: payload as object });
  expect(res.statusCode, res.body).toBe(201);
  return { data: res.json().data, raw: res.body };
}

async function search(company: Company, plate: string) {
  const res = await ctx.app.inject({
    method: 'POST',
    url: '/api/v1/claims/search-by-plate',
    headers: company.auth,
    payload: { vehicle_registration: plate },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

describe('POST /api/v1/claims', () => {
  it('creates a claim with status filed and returns it under data with 201', async () => {
    const company = await ctx.newCompany('Acme');
    const claimDate = addDays(today(), -10);
    const payload = body({ vehicle_registration: 'ab-12.3 c', claim_date: claimDate });
    const res = await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const { data } = res.json();
    expect(data).toMatchObject({
      claim_date: claimDate,
      claim_type: 'accident',
      amount: '1250.00',
      currency: 'EUR',
      is_at_fault: null,
      vehicle_registration: 'AB123C',
      source: 'api',
      status: 'filed',
      company_name: company.name,
      client: { first_name: 'Ona', last_name: 'Petraitė', date_of_birth: '1985-06-02', id_documents: [{ type: 'passport' }] },
    });
    expect(data.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/);
    expect(JSON.stringify(data)).not.toContain(payload.client.id_documents[0]!.number);
  });

  it('returns exactly the fields of a Claim and of its client, with UUID ids', async () => {
    const company = await ctx.newCompany();
    const { data } = await submit(company, body());
    expect(Object.keys(data).sort()).toEqual([
      'amount',
      'claim_date',
      'claim_type',
      'client',
      'company_name',
      'created_at',
      'currency',
      'id',
      'is_at_fault',
      'source',
      'status',
      'vehicle_registration',
    ]);
    expect(Object.keys(data.client).sort()).toEqual(['date_of_birth', 'first_name', 'id', 'id_documents', 'last_name']);
    expect(Object.keys(data.client.id_documents[0])).toEqual(['type']);
    expect(data.id).toMatch(UUID);
    expect(data.client.id).toMatch(UUID);
  });

  it('stamps created_at with the time of the submission', async () => {
    const company = await ctx.newCompany();
    const before = Date.now();
    const { data } = await submit(company, body());
    const createdAt = Date.parse(data.created_at);
    expect(createdAt).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 - 5000);
    expect(createdAt).toBeLessThanOrEqual(Date.now() + 5000);
  });

  it.each(['filed', 'under_investigation', 'settled', 'closed', 'disputed'])('keeps a given initial status %s', async (status) => {
    const company = await ctx.newCompany();
    const { data } = await submit(company, body({ status }));
    expect(data.status).toBe(status);
  });

  it('treats status null like an omitted status: filed', async () => {
    const company = await ctx.newCompany();
    const { data } = await submit(company, body({ status: null }));
    expect(data.status).toBe('filed');
  });

  it('stores the claim under the submitting company, readable by id', async () => {
    const company = await ctx.newCompany();
    const { data } = await submit(company, body());
    const res = await ctx.app.inject({ method: 'GET', url: `/api/v1/claims/${data.id}`, headers: company.auth });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toEqual(data);
  });

  describe('amount', () => {
    it('accepts a decimal string and returns two decimals', async () => {
      const company = await ctx.newCompany();
      expect((await submit(company, body({ amount: '1250.5' }))).data.amount).toBe('1250.50');
      expect((await submit(company, body({ amount: '99.99' }))).data.amount).toBe('99.99');
    });

    it('returns a JSON number as a string with two decimals', async () => {
      const company = await ctx.newCompany();
      expect((await submit(company, body({ amount: 0 }))).data.amount).toBe('0.00');
      expect((await submit(company, body({ amount: 12.3 }))).data.amount).toBe('12.30');
    });

    it('accepts the largest amount, 9999999999.99, as number and as string', async () => {
      const company = await ctx.newCompany();
      expect((await submit(company, body({ amount: 9999999999.99 }))).data.amount).toBe('9999999999.99');
      expect((await submit(company, body({ amount: '9999999999.99' }))).data.amount).toBe('9999999999.99');
    });

    it('is null when omitted or null', async () => {
      const company = await ctx.newCompany();
      expect((await submit(company, body({ amount: undefined }))).data.amount).toBeNull();
      expect((await submit(company, body({ amount: null }))).data.amount).toBeNull();
    });
  });

  it('uses EUR when currency is omitted or null, and accepts EUR', async () => {
    const company = await ctx.newCompany();
    expect((await submit(company, body({ currency: undefined }))).data.currency).toBe('EUR');
    expect((await submit(company, body({ currency: null }))).data.currency).toBe('EUR');
    expect((await submit(company, body({ currency: 'EUR' }))).data.currency).toBe('EUR');
  });

  it('keeps claim_type accident, theft or other, and null when omitted or null', async () => {
    const company = await ctx.newCompany();
    for (const t of ['accident', 'theft', 'other']) expect((await submit(company, body({ claim_type: t }))).data.claim_type).toBe(t);
    expect((await submit(company, body({ claim_type: null }))).data.claim_type).toBeNull();
    expect((await submit(company, body({ claim_type: undefined }))).data.claim_type).toBeNull();
  });

  it('keeps is_at_fault true, false or null', async () => {
    const company = await ctx.newCompany();
    expect((await submit(company, body({ is_at_fault: true }))).data.is_at_fault).toBe(true);
    expect((await submit(company, body({ is_at_fault: false }))).data.is_at_fault).toBe(false);
    expect((await submit(company, body({ is_at_fault: null }))).data.is_at_fault).toBeNull();
  });

  describe('vehicle_registration', () => {
    it('is stored normalized: spaces, dots and dashes removed, upper-cased', async () => {
      const company = await ctx.newCompany();
      const suffix = randomBytes(3).toString('hex');
      const { data } = await submit(company, body({ vehicle_registration: ` zz.${suffix} -9 ` }));
      expect(data.vehicle_registration).toBe(`ZZ${suffix.toUpperCase()}9`);
    });

    it('accepts 20 characters as sent, separators included', async () => {
      const company = await ctx.newCompany();
      const { data } = await submit(company, body({ vehicle_registration: 'AB-12.34 56-78.90 12' }));
      expect(data.vehicle_registration).toBe('AB1234567890' + '12');
    });

    it('accepts letters of any script (Cyrillic), which the plate search then finds', async () => {
      const company = await ctx.newCompany();
      const digits = String(Math.floor(Math.random() * 1e8)).padStart(8, '0');
      const { data } = await submit(company, body({ vehicle_registration: `жк-${digits}` }));
      expect(data.vehicle_registration).toBe(`ЖК${digits}`);
      expect((await search(company, `ЖК ${digits}`)).data.map((c: { id: string }) => c.id)).toEqual([data.id]);
    });
  });

  describe('dates', () => {
    it('accepts a claim dated today', async () => {
      const company = await ctx.newCompany();
      expect((await submit(company, body({ claim_date: today() }))).data.claim_date).toBe(today());
    });

    it('accepts a claim dated exactly three years ago (inclusive boundary)', async () => {
      const company = await ctx.newCompany();
      const date = minusYears(today(), 3);
      expect((await submit(company, body({ claim_date: date }))).data.claim_date).toBe(date);
    });

    it('accepts a date of birth of yesterday', async () => {
      const company = await ctx.newCompany();
      const dob = addDays(today(), -1);
      expect((await submit(company, body({}, { date_of_birth: dob }))).data.client.date_of_birth).toBe(dob);
    });
  });

  it('keeps names of 255 characters and in any script', async () => {
    const company = await ctx.newCompany();
    const { data } = await submit(company, body({}, { first_name: 'Ž'.repeat(255), last_name: 'Ångström-Šimkūnaitė' }));
    expect(data.client.first_name).toBe('Ž'.repeat(255));
    expect(data.client.last_name).toBe('Ångström-Šimkūnaitė');
  });

  it('keeps names exactly as written, quotes, commas, braces, backslashes and NULL included', async () => {
    const company = await ctx.newCompany();
    const first = `O'Brien, "Jr" {x} \\ [1]`;
    const last = 'NULL';
    const { data } = await submit(company, body({}, { first_name: first, last_name: last }));
    expect(data.client).toMatchObject({ first_name: first, last_name: last });
    const res = await ctx.app.inject({ method: 'GET', url: `/api/v1/claims/${data.id}`, headers: company.auth });
    expect(res.json().data.client).toMatchObject({ first_name: first, last_name: last });
  });

  it('ignores fields it does not know', async () => {
    const company = await ctx.newCompany();
    const { data } = await submit(company, { ...body({ note: 'x', source: 'bulk_import', id: 'mine' }), company_name: 'Other' });
    expect(data).not.toHaveProperty('note');
    expect(data.source).toBe('api');
    expect(data.id).toMatch(UUID);
    expect(data.company_name).toBe(company.name);
  });
});

describe('POST /api/v1/claims: client identity', () => {
  it('resolves the same document to the same client, across companies', async () => {
    const [a, b] = [await ctx.newCompany(), await ctx.newCompany()];
    const number = docNumber('N');
    const first = await submit(a, body({}, { id_documents: [{ type: 'passport', number }] }));
    const second = await submit(b, body({}, { id_documents: [{ type: 'passport', number }] }));
    expect(second.data.client.id).toBe(first.data.client.id);
  });

  it('treats "LT-123", "123" and " lt-1 23 " as the same document', async () => {
    const company = await ctx.newCompany();
    const n = randomBytes(4).readUInt32BE(0).toString();
    const withPrefix = await submit(company, body({}, { id_documents: [{ type: 'national_id', number: `LT-${n}` }] }));
    const bare = await submit(company, body({}, { id_documents: [{ type: 'national_id', number: n }] }));
    const spaced = await submit(
      company,
      body({}, { id_documents: [{ type: 'national_id', number: ` lt-${n.slice(0, 2)} ${n.slice(2)} ` }] }),
    );
    expect(bare.data.client.id).toBe(withPrefix.data.client.id);
    expect(spaced.data.client.id).toBe(withPrefix.data.client.id);
  });

  it('creates a new client for a document it does not know', async () => {
    const company = await ctx.newCompany();
    const one = await submit(company, body());
    const two = await submit(company, body());
    expect(two.data.client.id).not.toBe(one.data.client.id);
  });

  it('tells documents apart by type: the same number as another type is another document', async () => {
    const company = await ctx.newCompany();
    const number = docNumber('N');
    const asPassport = await submit(company, body({}, { id_documents: [{ type: 'passport', number }] }));
    const asNationalId = await submit(company, body({}, { id_documents: [{ type: 'national_id', number }] }));
    expect(asNationalId.data.client.id).not.toBe(asPassport.data.client.id);
  });

  it('adds a new document type to the same client, and the client then lists both types', async () => {
    const company = await ctx.newCompany();
    const [passport, nationalId] = [docNumber('N'), docNumber('N')];
    const first = await submit(company, body({}, { id_documents: [{ type: 'passport', number: passport }] }));
    const both = await submit(
      company,
      body(
        {},
        {
          id_documents: [
            { type: 'passport', number: passport },
            { type: 'national_id', number: nationalId },
          ],
        },
      ),
    );
    expect(both.data.client.id).toBe(first.data.client.id);
    expect(both.data.client.id_documents).toEqual([{ type: 'national_id' }, { type: 'passport' }]);
    // The added document alone now finds the same person.
    const byNationalId = await submit(company, body({}, { id_documents: [{ type: 'national_id', number: nationalId }] }));
    expect(byNationalId.data.client.id).toBe(first.data.client.id);
    expect(byNationalId.data.client.id_documents).toEqual([{ type: 'national_id' }, { type: 'passport' }]);
    // Earlier claims of the person list the added type when read again.
    const reread = await ctx.app.inject({ method: 'GET', url: `/api/v1/claims/${first.data.id}`, headers: company.auth });
    expect(reread.json().data.client.id_documents).toEqual([{ type: 'national_id' }, { type: 'passport' }]);
  });

  it('keeps the names on record when the person is submitted with other names', async () => {
    const company = await ctx.newCompany();
    const number = docNumber('N');
    const first = await submit(
      company,
      body({}, { first_name: 'Ona', last_name: 'Petraitė', id_documents: [{ type: 'passport', number }] }),
    );
    const second = await submit(
      company,
      body({}, { first_name: 'Onutė', last_name: 'Jonaitienė', id_documents: [{ type: 'passport', number }] }),
    );
    expect(second.data.client).toMatchObject({ id: first.data.client.id, first_name: 'Ona', last_name: 'Petraitė' });
    const reread = await ctx.app.inject({ method: 'GET', url: `/api/v1/claims/${second.data.id}`, headers: company.auth });
    expect(reread.json().data.client).toMatchObject({ first_name: 'Ona', last_name: 'Petraitė' });
  });

  it('counts the same type and number twice in one request once', async () => {
    const company = await ctx.newCompany();
    const number = docNumber('N');
    const { data } = await submit(
      company,
      body(
        {},
        {
          id_documents: [
            { type: 'passport', number },
            { type: 'passport', number: `LT-${number}` },
          ],
        },
      ),
    );
    expect(data.client.id_documents).toEqual([{ type: 'passport' }]);
    const again = await submit(company, body({}, { id_documents: [{ type: 'passport', number }] }));
    expect(again.data.client.id).toBe(data.client.id);
  });

  it('never returns a document number, in any form', async () => {
    const company = await ctx.newCompany();
    const [passport, nationalId] = [docNumber('N'), docNumber('N')];
    const { raw } = await submit(
      company,
      body(
        {},
        {
          id_documents: [
            { type: 'passport', number: `LT-${passport}` },
            { type: 'national_id', number: nationalId },
          ],
        },
      ),
    );
    for (const secret of [passport, nationalId, `LT-${passport}`]) expect(raw).not.toContain(secret);
    const list = await ctx.app.inject({ method: 'GET', url: '/api/v1/claims', headers: company.auth });
    for (const secret of [passport, nationalId]) expect(list.body).not.toContain(secret);
  });
});

// UTC+14 and UTC-11: at any moment at least one of them is on another date than UTC, so together
// they show that "today" is taken in APP_TIMEZONE.
describe.each(['Pacific/Kiritimati', 'Pacific/Pago_Pago'])('with APP_TIMEZONE=%s', (timeZone) => {
  let zoned: TestContext;
  beforeAll(async () => {
    zoned = await createTestContext({ APP_TIMEZONE: timeZone });
  });
  afterAll(async () => zoned.close());

  it("accepts a claim dated today in that time zone and rejects the zone's tomorrow as in the future", async () => {
    const company = await zoned.newCompany();
    const localToday = todayIn(timeZone);
    const post = (claim_date: string) =>
      zoned.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: claimBody({ claim_date }) });
    const accepted = await post(localToday);
    expect(accepted.statusCode, accepted.body).toBe(201);
    const tomorrow = await post(addDays(localToday, 1));
    expect(tomorrow.statusCode).toBe(422);
    expect(tomorrow.json().errors).toEqual({ claim_date: ['The claim date cannot be in the future.'] });
  });
});
