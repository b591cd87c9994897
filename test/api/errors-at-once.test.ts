import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { addDays, apiError, claimBody, createTestContext, type Company, type TestContext } from '../harness';
import { csv, postImport, validRow } from '../import-helpers';

/**
 * One answer names every field in error, whatever rule each breaks (the schema's or the
 * domain's), and each message says what to fix: an impossible date is "not a date in the
 * calendar", a decimal comma is told to be a dot.
 */
let ctx: TestContext;
let company: Company;
beforeAll(async () => {
  // A fixed "today", so that the future claim date and the date of birth are what the test says.
  ctx = await createTestContext({}, { today: () => '2026-11-20' });
  company = await ctx.newCompany('Errors at once');
});
afterAll(async () => ctx?.close());

const post = (url: string, payload: object) => ctx.app.inject({ method: 'POST', url, headers: company.auth, payload });

describe('POST /api/v1/claims: every error in one answer', () => {
  it('names all five fields of a body with an empty id_documents, a future claim date, an impossible date of birth, a bad plate and a negative amount', async () => {
    const res = await post(
      '/api/v1/claims',
      claimBody(
        { claim_date: addDays('2026-11-20', 1), vehicle_registration: 'AB/123', amount: -5 },
        { date_of_birth: '1990-02-30', id_documents: [] },
      ),
    );
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json()).toEqual(
      apiError('validation_failed', 'The date of birth is not a date in the calendar: February 1990 has 28 days.', {
        'client.date_of_birth': ['The date of birth is not a date in the calendar: February 1990 has 28 days.'],
        'client.id_documents': ['The id documents field must have at least 1 item.'],
        claim_date: ['The claim date cannot be in the future.'],
        vehicle_registration: ['The vehicle registration must consist of letters and digits (spaces, dots and dashes are ignored).'],
        amount: ['The amount must be at least 0.'],
      }),
    );
  });

  it('names the domain rules beside the errors of the shape at any depth (a document without a type, a missing name)', async () => {
    const res = await post(
      '/api/v1/claims',
      claimBody({ claim_date: '2026-13-01', amount: '250,00' }, { first_name: undefined, id_documents: [{ number: 'LT-' }] }),
    );
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().errors).toEqual({
      'client.first_name': ['The first name field is required.'],
      'client.id_documents.0.type': ['The document type field is required.'],
      'client.id_documents.0.number': ['The document number must contain more than a country prefix.'],
      claim_date: ['The claim date is not a date in the calendar: there is no month 13.'],
      amount: ['The amount must use a dot as the decimal separator (250.00).'],
    });
  });

  it('says a well-formed impossible date is not in the calendar, and a badly written one what format to use', async () => {
    const res = await post('/api/v1/claims', claimBody({ claim_date: '2026-02-29' }, { date_of_birth: '30.02.1990' }));
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().errors).toEqual({
      'client.date_of_birth': ['The date of birth field must be a valid date in the format YYYY-MM-DD.'],
      claim_date: ['The claim date is not a date in the calendar: February 2026 has 28 days.'],
    });
  });

  it('tells a decimal comma to be a dot, with the amount so written', async () => {
    for (const [amount, dotted] of [
      ['250,00', '250.00'],
      ['1.250,5', '1250.5'],
      [' 1 250,50 ', '1250.50'],
    ]) {
      const res = await post('/api/v1/claims', claimBody({ amount }));
      expect(res.statusCode, amount).toBe(422);
      expect(res.json().errors, amount).toEqual({ amount: [`The amount must use a dot as the decimal separator (${dotted}).`] });
    }
    // A comma before three digits may be a thousands separator: no guess.
    const thousands = await post('/api/v1/claims', claimBody({ amount: '1,250' }));
    expect(thousands.json().errors).toEqual({ amount: ['The amount field must be a number.'] });
  });

  it('names every field of a person search too', async () => {
    const res = await post('/api/v1/claims/search-by-person', {
      date_of_birth: '1990-02-30',
      id_documents: [{ type: 'visa', number: ' ' }],
    });
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().errors).toEqual({
      date_of_birth: ['The date of birth is not a date in the calendar: February 1990 has 28 days.'],
      'id_documents.0.type': ['The document type field must be one of: passport, national_id, alien_registration.'],
      'id_documents.0.number': ['The document number field is required.'],
    });
  });
});

describe('POST /api/v1/claims/import: the same messages for a row', () => {
  it('tells a row of a semicolon file with 250,00 and 1990-02-30 what to fix, with every field of the row', async () => {
    const rows = [
      validRow({ amount: '250,00', date_of_birth: '1990-02-30', claim_date: addDays('2026-11-20', 1) }),
      validRow({ amount: '250.00' }),
    ];
    const res = await postImport(ctx.app, company.auth, csv(rows, { delimiter: ';' }));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({
      imported: 1,
      failed: 1,
      errors: [
        {
          row: 2,
          messages: {
            date_of_birth: ['The date of birth is not a date in the calendar: February 1990 has 28 days.'],
            claim_date: ['The claim date cannot be in the future.'],
            amount: ['The amount must use a dot as the decimal separator (250.00).'],
          },
        },
      ],
    });
  });
});
