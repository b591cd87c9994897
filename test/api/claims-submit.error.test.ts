import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { minusYears } from '../../src/domain/dates';
import { apiError, claimBody, createTestContext, type TestContext, addDays } from '../harness';
import { docNumber } from '../import-helpers';

let ctx: TestContext;
let company: Awaited<ReturnType<TestContext['newCompany']>>;
beforeAll(async () => {
  ctx = await createTestContext();
  company = await ctx.newCompany('Errors');
});
afterAll(async () => ctx.close());

const today = () => ctx.deps.today();
const body = (overrides: Record<string, unknown> = {}, client: Record<string, unknown> = {}) =>
  claimBody({ claim_date: addDays(today(), -30), ...overrides }, client);

const post = (payload: unknown) =>
  ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: payload as object });

/** Posts, expects a 422 in the contract's shape, and returns its errors. */
async function rejected(payload: unknown): Promise<Record<string, string[]>> {
  const res = await post(payload);
  expect(res.statusCode, res.body).toBe(422);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  const json = res.json();
  expect(Object.keys(json).sort()).toEqual(['code', 'errors', 'message', 'request_id']);
  expect(json.code).toBe('validation_failed');
  expect(json.message).toBe(Object.values(json.errors as Record<string, string[]>)[0]![0]);
  for (const list of Object.values(json.errors as Record<string, unknown>)) {
    expect(Array.isArray(list) && list.length > 0 && list.every((m) => typeof m === 'string')).toBe(true);
  }
  return json.errors;
}

async function claimsWithPlate(plate: string): Promise<number> {
  const res = await ctx.app.inject({
    method: 'POST',
    url: '/api/v1/claims/search-by-plate',
    headers: company.auth,
    payload: { vehicle_registration: plate },
  });
  expect(res.statusCode).toBe(200);
  return res.json().meta.total_claims;
}

async function submitted(payload: unknown) {
  const res = await post(payload);
  expect(res.statusCode, res.body).toBe(201);
  return res.json().data;
}

describe('POST /api/v1/claims: validation failures are 422 { message, errors }', () => {
  it('puts the first message in message and every field under errors', async () => {
    const res = await post(body({ claim_date: addDays(today(), 1), currency: 'USD' }));
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual(
      apiError('validation_failed', 'The claim date cannot be in the future.', {
        claim_date: ['The claim date cannot be in the future.'],
        currency: ['The currency must be EUR; no other currency is supported.'],
      }),
    );
  });

  it('names each missing required field', async () => {
    const errors = await rejected({});
    expect(Object.keys(errors).sort()).toEqual(['claim_date', 'client', 'vehicle_registration']);
    expect(errors.client).toEqual(['The client field is required.']);
  });

  it('names missing client fields with dotted paths', async () => {
    const errors = await rejected(body({ client: {} }));
    expect(Object.keys(errors).sort()).toEqual(['client.date_of_birth', 'client.first_name', 'client.id_documents', 'client.last_name']);
    expect(errors['client.first_name']).toEqual(['The first name field is required.']);
  });

  it('rejects an empty first name', async () => {
    expect(await rejected(body({}, { first_name: '' }))).toEqual({ 'client.first_name': ['The first name field is required.'] });
  });

  it('rejects a client that is not an object', async () => {
    expect(Object.keys(await rejected(body({ client: 'Ona Petraitė' })))).toEqual(['client']);
  });

  describe('amount', () => {
    it('rejects a negative amount, as number and as string', async () => {
      expect(await rejected(body({ amount: -1 }))).toEqual({ amount: ['The amount must be at least 0.'] });
      expect(await rejected(body({ amount: '-0.01' }))).toEqual({ amount: ['The amount must be at least 0.'] });
    });

    it('rejects more than two decimal places', async () => {
      expect(await rejected(body({ amount: 12.345 }))).toEqual({ amount: ['The amount must have at most 2 decimal places.'] });
      expect(await rejected(body({ amount: '12.345' }))).toEqual({ amount: ['The amount must have at most 2 decimal places.'] });
    });

    it('rejects more than 9999999999.99', async () => {
      expect(await rejected(body({ amount: 10000000000 }))).toEqual({ amount: ['The amount must not be greater than 9999999999.99.'] });
      expect(await rejected(body({ amount: '10000000000.00' }))).toEqual({
        amount: ['The amount must not be greater than 9999999999.99.'],
      });
    });

    it('rejects what is not a number', async () => {
      expect(await rejected(body({ amount: 'twelve' }))).toEqual({ amount: ['The amount field must be a number.'] });
      expect(Object.keys(await rejected(body({ amount: true })))).toEqual(['amount']);
    });
  });

  it('rejects any currency but EUR', async () => {
    for (const currency of ['USD', 'eur']) {
      expect(await rejected(body({ currency }))).toEqual({ currency: ['The currency must be EUR; no other currency is supported.'] });
    }
  });

  it('rejects a claim_type outside accident, theft, other', async () => {
    expect(await rejected(body({ claim_type: 'fire' }))).toEqual({
      claim_type: ['The claim type field must be one of: accident, theft, other.'],
    });
  });

  it('rejects is_at_fault given as the string "true" or as a number', async () => {
    expect(await rejected(body({ is_at_fault: 'true' }))).toEqual({ is_at_fault: ['The is at fault field must be true or false.'] });
    expect(await rejected(body({ is_at_fault: 1 }))).toEqual({ is_at_fault: ['The is at fault field must be true or false.'] });
  });

  it('rejects an unknown initial status', async () => {
    expect(await rejected(body({ status: 'open' }))).toEqual({
      status: ['The status field must be one of: filed, under_investigation, settled, closed, disputed.'],
    });
  });

  describe('vehicle_registration', () => {
    it('rejects 21 characters as sent, even if normalizing would shorten it', async () => {
      expect(await rejected(body({ vehicle_registration: 'AB-12.34 56-78.90 123' }))).toEqual({
        vehicle_registration: ['The vehicle registration field must not be greater than 20 characters.'],
      });
    });

    it('rejects a value that leaves no letters and digits, or other characters', async () => {
      for (const plate of ['- . -', 'AB_123', 'AB/123', '#1']) {
        expect(await rejected(body({ vehicle_registration: plate })), plate).toEqual({
          vehicle_registration: ['The vehicle registration must consist of letters and digits (spaces, dots and dashes are ignored).'],
        });
      }
    });

    it('rejects a blank or non-string plate', async () => {
      expect(await rejected(body({ vehicle_registration: '   ' }))).toEqual({
        vehicle_registration: ['The vehicle registration field is required.'],
      });
      expect(Object.keys(await rejected(body({ vehicle_registration: 123 })))).toEqual(['vehicle_registration']);
    });
  });

  describe('claim_date', () => {
    it('rejects a date that does not exist (2025-02-30)', async () => {
      expect(await rejected(body({ claim_date: '2025-02-30' }))).toEqual({
        claim_date: ['The claim date is not a date in the calendar: February 2025 has 28 days.'],
      });
    });

    it('rejects other formats', async () => {
      for (const claim_date of ['14.03.2026', '2026-3-14', '2026-03-14T00:00:00Z']) {
        expect(Object.keys(await rejected(body({ claim_date }))), claim_date).toEqual(['claim_date']);
      }
    });

    it('rejects tomorrow with "The claim date cannot be in the future."', async () => {
      expect(await rejected(body({ claim_date: addDays(today(), 1) }))).toEqual({
        claim_date: ['The claim date cannot be in the future.'],
      });
    });

    it('rejects the day before today minus three years', async () => {
      expect(await rejected(body({ claim_date: addDays(minusYears(today(), 3), -1) }))).toEqual({
        claim_date: ['The claim date must be within the last 3 years.'],
      });
    });
  });

  describe('client.date_of_birth', () => {
    it('rejects today and a future date', async () => {
      for (const dob of [today(), addDays(today(), 1)]) {
        expect(await rejected(body({}, { date_of_birth: dob }))).toEqual({
          'client.date_of_birth': ['The date of birth must be a date before today.'],
        });
      }
    });

    it('rejects a date that does not exist', async () => {
      expect(await rejected(body({}, { date_of_birth: '1990-02-29' }))).toEqual({
        'client.date_of_birth': ['The date of birth is not a date in the calendar: February 1990 has 28 days.'],
      });
    });
  });

  it('rejects names longer than 255 characters', async () => {
    expect(await rejected(body({}, { first_name: 'a'.repeat(256) }))).toEqual({
      'client.first_name': ['The first name field must not be greater than 255 characters.'],
    });
    expect(await rejected(body({}, { last_name: 'b'.repeat(256) }))).toEqual({
      'client.last_name': ['The last name field must not be greater than 255 characters.'],
    });
  });

  it('rejects a name with a NUL character as a 422, not a server error', async () => {
    expect(Object.keys(await rejected(body({}, { first_name: 'O\u0000na' })))).toEqual(['client.first_name']);
  });

  describe('client.id_documents', () => {
    it('needs at least one document', async () => {
      expect(await rejected(body({}, { id_documents: [] }))).toEqual({
        'client.id_documents': ['The id documents field must have at least 1 item.'],
      });
    });

    it('reports document fields under dotted paths with the index', async () => {
      const errors = await rejected(
        body(
          {},
          {
            id_documents: [
              { type: 'passport', number: docNumber('N') },
              { type: 'driving_licence', number: docNumber('N') },
              { type: 'passport' },
            ],
          },
        ),
      );
      expect(errors).toEqual({
        'client.id_documents.1.type': ['The document type field must be one of: passport, national_id, alien_registration.'],
        'client.id_documents.2.number': ['The document number field is required.'],
      });
    });

    it('rejects a number longer than 255 characters', async () => {
      expect(await rejected(body({}, { id_documents: [{ type: 'passport', number: '7'.repeat(256) }] }))).toEqual({
        'client.id_documents.0.number': ['The document number field must not be greater than 255 characters.'],
      });
    });

    it('rejects a number that is only a country prefix', async () => {
      expect(
        await rejected(
          body(
            {},
            {
              id_documents: [
                { type: 'passport', number: docNumber('N') },
                { type: 'national_id', number: 'LT-' },
              ],
            },
          ),
        ),
      ).toEqual({
        'client.id_documents.1.number': ['The document number must contain more than a country prefix.'],
      });
    });
  });
});

describe('POST /api/v1/claims: identity data-quality errors', () => {
  it('rejects a known document with another date of birth on client.date_of_birth and writes nothing', async () => {
    const [passport, nationalId] = [docNumber('N'), docNumber('N')];
    const first = await submitted(body({}, { date_of_birth: '1980-01-01', id_documents: [{ type: 'passport', number: passport }] }));

    const mismatch = body(
      {},
      {
        date_of_birth: '1980-01-02',
        id_documents: [
          { type: 'passport', number: passport },
          { type: 'national_id', number: nationalId },
        ],
      },
    );
    const errors = await rejected(mismatch);
    expect(errors).toEqual({
      'client.date_of_birth': [
        'The date of birth does not match the client on record for this identity document (data quality error: check the date of birth and the document).',
      ],
    });
    // No claim was stored ...
    expect(await claimsWithPlate(mismatch.vehicle_registration)).toBe(0);
    // ... and the new document was not attached to the person on record.
    const byNationalId = await submitted(
      body({}, { date_of_birth: '1980-01-01', id_documents: [{ type: 'national_id', number: nationalId }] }),
    );
    expect(byNationalId.client.id).not.toBe(first.client.id);
    expect(byNationalId.client.id_documents).toEqual([{ type: 'national_id' }]);
  });

  it('rejects documents that belong to two different clients on client.id_documents and merges nothing', async () => {
    const [passport, nationalId] = [docNumber('N'), docNumber('N')];
    const a = await submitted(body({}, { id_documents: [{ type: 'passport', number: passport }] }));
    const b = await submitted(body({}, { id_documents: [{ type: 'national_id', number: nationalId }] }));
    expect(a.client.id).not.toBe(b.client.id);

    const both = body(
      {},
      {
        id_documents: [
          { type: 'passport', number: passport },
          { type: 'national_id', number: nationalId },
        ],
      },
    );
    expect(await rejected(both)).toEqual({
      'client.id_documents': ['The identity documents belong to different clients on record (data quality error: nothing was merged).'],
    });
    expect(await claimsWithPlate(both.vehicle_registration)).toBe(0);

    const againA = await submitted(body({}, { id_documents: [{ type: 'passport', number: passport }] }));
    const againB = await submitted(body({}, { id_documents: [{ type: 'national_id', number: nationalId }] }));
    expect(againA.client).toMatchObject({ id: a.client.id, id_documents: [{ type: 'passport' }] });
    expect(againB.client).toMatchObject({ id: b.client.id, id_documents: [{ type: 'national_id' }] });
  });
});

describe('POST /api/v1/claims: document numbers never appear in error bodies', () => {
  it('does not echo a number in validation or data-quality errors', async () => {
    const secret = docNumber('N');
    const bodies = [
      body({ claim_date: '2025-02-30' }, { id_documents: [{ type: 'passport', number: `LT-${secret}` }] }),
      body({}, { id_documents: [{ type: 'visa', number: secret }] }),
      body({}, { id_documents: [{ type: 'passport', number: secret.padEnd(256, '9') }] }),
      body(
        {},
        {
          id_documents: [
            { type: 'passport', number: secret },
            { type: 'passport', number: 7 },
          ],
        },
      ),
    ];
    for (const b of bodies) {
      const res = await post(b);
      expect(res.statusCode).toBe(422);
      expect(res.body).not.toContain(secret);
    }
    await submitted(body({}, { date_of_birth: '1970-01-01', id_documents: [{ type: 'alien_registration', number: secret }] }));
    const mismatch = await post(body({}, { date_of_birth: '1970-01-02', id_documents: [{ type: 'alien_registration', number: secret }] }));
    expect(mismatch.statusCode).toBe(422);
    expect(mismatch.body).not.toContain(secret);
  });
});
