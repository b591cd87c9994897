import { describe, expect, it } from 'vitest';

import { LIMITS, messages, parseAmount, validateClaimInput } from '../../src/domain/claims/claim';
import type { FieldErrors } from '../../src/domain/errors';
import { validationError } from '../../src/domain/errors';

// "Today" is a parameter of the rules, so a fixed date keeps these tests exact.
const TODAY = '2026-06-15';

function body(overrides: Record<string, unknown> = {}, client: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    client: {
      first_name: 'Ona',
      last_name: 'Petraitė',
      date_of_birth: '1985-06-02',
      id_documents: [{ type: 'passport', number: 'LT-P1234567' }],
      ...client,
    },
    claim_date: '2026-03-14',
    vehicle_registration: 'ab-12.3 c',
    ...overrides,
  };
}

const errorsOf = (b: unknown): FieldErrors => {
  const { value, errors } = validateClaimInput(b, TODAY);
  expect(value).toBeUndefined();
  return errors;
};
const valueOf = (b: unknown) => {
  const { value, errors } = validateClaimInput(b, TODAY);
  expect(errors).toEqual({});
  return value!;
};

describe('validateClaimInput: a valid submission', () => {
  it('is normalized into the input the identity resolution works on', () => {
    const value = valueOf(
      body(
        { amount: 1250, currency: 'EUR', claim_type: 'theft', is_at_fault: false, status: 'disputed' },
        {
          id_documents: [
            { type: 'passport', number: ' lt-p12 34567 ' },
            { type: 'national_id', number: '39001010000' },
          ],
        },
      ),
    );
    expect(value).toEqual({
      client: {
        firstName: 'Ona',
        lastName: 'Petraitė',
        dateOfBirth: '1985-06-02',
        documents: [
          { type: 'passport', number: 'P1234567' },
          { type: 'national_id', number: '39001010000' },
        ],
      },
      claim_date: '2026-03-14',
      claim_type: 'theft',
      amount: '1250.00',
      currency: 'EUR',
      is_at_fault: false,
      vehicle_registration: 'AB123C',
      status: 'disputed',
    });
  });

  it('fills the defaults: status filed, currency EUR, optional fields null', () => {
    const value = valueOf(body());
    expect(value).toMatchObject({ status: 'filed', currency: 'EUR', claim_type: null, amount: null, is_at_fault: null });
  });

  it('treats null optional fields as not given', () => {
    const value = valueOf(body({ claim_type: null, amount: null, currency: null, is_at_fault: null }));
    expect(value).toMatchObject({ currency: 'EUR', claim_type: null, amount: null, is_at_fault: null });
  });
});

describe('validateClaimInput: the body and required fields', () => {
  it('rejects a body that is not an object', () => {
    for (const b of [null, [], 'claim', 42]) {
      expect(errorsOf(b)).toEqual({ body: ['The request body must be a JSON object.'] });
    }
  });

  it('names every missing required field with its dotted path', () => {
    expect(errorsOf({})).toEqual({
      client: ['The client field is required.'],
      claim_date: ['The claim date field is required.'],
      vehicle_registration: ['The vehicle registration field is required.'],
    });
    expect(errorsOf(body({}, { first_name: undefined, last_name: undefined, date_of_birth: undefined, id_documents: undefined }))).toEqual({
      'client.first_name': ['The first name field is required.'],
      'client.last_name': ['The last name field is required.'],
      'client.date_of_birth': ['The date of birth field is required.'],
      'client.id_documents': ['The id documents field is required.'],
    });
  });

  it('treats a blank string as missing', () => {
    expect(errorsOf(body({}, { first_name: '   ' }))).toEqual({ 'client.first_name': ['The first name field is required.'] });
  });

  it('rejects a client that is not an object', () => {
    expect(errorsOf(body({ client: 'Ona' }))).toEqual({ client: ['The client field must be an object.'] });
  });
});

describe('validateClaimInput: names', () => {
  it('accepts 255 characters and rejects 256', () => {
    valueOf(body({}, { first_name: 'a'.repeat(255), last_name: 'b'.repeat(255) }));
    expect(errorsOf(body({}, { first_name: 'a'.repeat(256) }))).toEqual({
      'client.first_name': ['The first name field must not be greater than 255 characters.'],
    });
    expect(errorsOf(body({}, { last_name: 'b'.repeat(256) }))).toEqual({
      'client.last_name': ['The last name field must not be greater than 255 characters.'],
    });
  });

  it('counts characters, not UTF-16 code units (255 characters outside the BMP are accepted)', () => {
    valueOf(body({}, { first_name: '𝓐'.repeat(255) }));
    expect(Object.keys(errorsOf(body({}, { first_name: '𝓐'.repeat(256) })))).toEqual(['client.first_name']);
  });

  it('rejects characters that cannot be stored: NUL and unpaired surrogates', () => {
    expect(Object.keys(errorsOf(body({}, { first_name: 'O\u0000na' })))).toEqual(['client.first_name']);
    expect(Object.keys(errorsOf(body({}, { last_name: 'P\ud800' })))).toEqual(['client.last_name']);
  });

  it('rejects a name that is not a string', () => {
    expect(errorsOf(body({}, { first_name: 42 }))).toEqual({ 'client.first_name': ['The first name field must be a string.'] });
  });
});

describe('validateClaimInput: date of birth', () => {
  it('must be strictly before today', () => {
    valueOf(body({}, { date_of_birth: '2026-06-14' }));
    expect(errorsOf(body({}, { date_of_birth: TODAY }))).toEqual({ 'client.date_of_birth': [messages.dobBeforeToday] });
    expect(errorsOf(body({}, { date_of_birth: '2030-01-01' }))).toEqual({ 'client.date_of_birth': [messages.dobBeforeToday] });
  });

  it('must be a real calendar date', () => {
    expect(errorsOf(body({}, { date_of_birth: '1990-02-30' }))).toEqual({
      'client.date_of_birth': ['The date of birth is not a date in the calendar: February 1990 has 28 days.'],
    });
    expect(Object.keys(errorsOf(body({}, { date_of_birth: '02/03/1990' })))).toEqual(['client.date_of_birth']);
  });
});

describe('validateClaimInput: claim date', () => {
  it('accepts today', () => {
    valueOf(body({ claim_date: TODAY }));
  });

  it('rejects tomorrow as in the future', () => {
    expect(errorsOf(body({ claim_date: '2026-06-16' }))).toEqual({ claim_date: ['The claim date cannot be in the future.'] });
  });

  it('accepts exactly three years ago and rejects the day before', () => {
    valueOf(body({ claim_date: '2023-06-15' }));
    expect(errorsOf(body({ claim_date: '2023-06-14' }))).toEqual({ claim_date: ['The claim date must be within the last 3 years.'] });
  });

  it('uses 28 February three years before a 29 February', () => {
    expect(validateClaimInput(body({ claim_date: '2025-02-28' }, { date_of_birth: '1980-01-01' }), '2028-02-29').errors).toEqual({});
    expect(validateClaimInput(body({ claim_date: '2025-02-27' }), '2028-02-29').errors).toHaveProperty('claim_date');
  });

  it('must be a real calendar date', () => {
    expect(errorsOf(body({ claim_date: '2025-02-30' }))).toEqual({
      claim_date: ['The claim date is not a date in the calendar: February 2025 has 28 days.'],
    });
  });
});

describe('validateClaimInput: vehicle registration', () => {
  it('accepts 20 characters as sent and rejects 21, even when normalizing would shorten it', () => {
    expect(valueOf(body({ vehicle_registration: 'A'.repeat(20) })).vehicle_registration).toBe('A'.repeat(20));
    expect(errorsOf(body({ vehicle_registration: 'AB-12-34-56-78-90-123' }))).toEqual({
      vehicle_registration: ['The vehicle registration field must not be greater than 20 characters.'],
    });
  });

  it('must leave letters and digits after normalization', () => {
    for (const plate of ['- . -', 'AB_12', 'AB/12', 'AB#1']) {
      expect(errorsOf(body({ vehicle_registration: plate })), plate).toEqual({ vehicle_registration: [messages.plateCharacters] });
    }
  });

  it('accepts letters of any script', () => {
    expect(valueOf(body({ vehicle_registration: 'аб 123' })).vehicle_registration).toBe('АБ123');
  });

  it('must be a string', () => {
    expect(errorsOf(body({ vehicle_registration: 123 }))).toEqual({
      vehicle_registration: ['The vehicle registration field must be a string.'],
    });
  });
});

describe('validateClaimInput: identity documents', () => {
  it('needs at least one document', () => {
    expect(errorsOf(body({}, { id_documents: [] }))).toEqual({
      'client.id_documents': ['The id documents field must have at least 1 item.'],
    });
  });

  it('must be a list', () => {
    expect(errorsOf(body({}, { id_documents: { type: 'passport', number: '1' } }))).toEqual({
      'client.id_documents': ['The id documents field must be a list.'],
    });
  });

  it(`accepts at most ${LIMITS.maxDocuments} documents`, () => {
    const docs = (n: number) => Array.from({ length: n }, (_, i) => ({ type: 'passport', number: `N${i}` }));
    valueOf(body({}, { id_documents: docs(LIMITS.maxDocuments) }));
    expect(Object.keys(errorsOf(body({}, { id_documents: docs(LIMITS.maxDocuments + 1) })))).toEqual(['client.id_documents']);
  });

  it('reports each document field under a dotted path with its index', () => {
    expect(errorsOf(body({}, { id_documents: [{ type: 'passport', number: '1' }, { type: 'driving_licence' }, 'x'] }))).toEqual({
      'client.id_documents.1.type': ['The document type field must be one of: passport, national_id, alien_registration.'],
      'client.id_documents.1.number': ['The document number field is required.'],
      'client.id_documents.2': [expect.stringContaining('must be an object')],
    });
  });

  it('names an element that is not an object in words, not by its index', () => {
    const [message] = errorsOf(body({}, { id_documents: ['x'] }))['client.id_documents.0']!;
    expect(message).not.toMatch(/The 0 field/);
  });

  it('accepts a number of 255 characters and rejects 256', () => {
    valueOf(body({}, { id_documents: [{ type: 'passport', number: '9'.repeat(255) }] }));
    expect(errorsOf(body({}, { id_documents: [{ type: 'passport', number: '9'.repeat(256) }] }))).toEqual({
      'client.id_documents.0.number': ['The document number field must not be greater than 255 characters.'],
    });
  });

  it('rejects a number that is only a country prefix', () => {
    expect(errorsOf(body({}, { id_documents: [{ type: 'passport', number: 'LT-' }] }))).toEqual({
      'client.id_documents.0.number': [messages.documentNumberEmpty],
    });
  });

  it('counts the same type and normalized number once', () => {
    const value = valueOf(
      body(
        {},
        {
          id_documents: [
            { type: 'passport', number: 'LT-123' },
            { type: 'passport', number: ' 1 23' },
            { type: 'national_id', number: '123' },
          ],
        },
      ),
    );
    expect(value.client.documents).toEqual([
      { type: 'passport', number: '123' },
      { type: 'national_id', number: '123' },
    ]);
  });

  it('never puts a document number into a message', () => {
    const secret = 'SECRET-NUMBER-'.padEnd(300, '7');
    const errors = errorsOf(
      body(
        {},
        {
          id_documents: [
            { type: 'passport', number: secret },
            { type: 'visa', number: 'SECRET2' },
          ],
        },
      ),
    );
    expect(JSON.stringify(errors)).not.toMatch(/SECRET/);
  });
});

describe('validateClaimInput: optional fields', () => {
  it('claim_type is one of accident, theft, other', () => {
    for (const t of ['accident', 'theft', 'other']) expect(valueOf(body({ claim_type: t })).claim_type).toBe(t);
    expect(errorsOf(body({ claim_type: 'fire' }))).toEqual({
      claim_type: ['The claim type field must be one of: accident, theft, other.'],
    });
  });

  it('currency is only EUR', () => {
    expect(valueOf(body({ currency: 'EUR' })).currency).toBe('EUR');
    for (const c of ['USD', 'eur', '']) expect(errorsOf(body({ currency: c })), c).toEqual({ currency: [messages.currency] });
  });

  it('is_at_fault is a boolean; the string "true" is rejected', () => {
    expect(valueOf(body({ is_at_fault: true })).is_at_fault).toBe(true);
    expect(valueOf(body({ is_at_fault: false })).is_at_fault).toBe(false);
    for (const v of ['true', 1, 0]) {
      expect(errorsOf(body({ is_at_fault: v }))).toEqual({ is_at_fault: ['The is at fault field must be true or false.'] });
    }
  });

  it('status keeps any of the five statuses and rejects others', () => {
    for (const s of ['filed', 'under_investigation', 'settled', 'closed', 'disputed']) expect(valueOf(body({ status: s })).status).toBe(s);
    expect(errorsOf(body({ status: 'open' }))).toEqual({
      status: ['The status field must be one of: filed, under_investigation, settled, closed, disputed.'],
    });
  });
});

describe('validateClaimInput: several problems at once', () => {
  it('reports every field, and the first message is the one a 422 shows', () => {
    const errors = errorsOf(body({ claim_date: '2099-01-01', currency: 'USD' }, { first_name: '' }));
    expect(Object.keys(errors)).toEqual(['client.first_name', 'claim_date', 'currency']);
    expect(validationError(errors).message).toBe('The first name field is required.');
  });
});

describe('parseAmount', () => {
  const ok = (v: unknown) => {
    const errors: FieldErrors = {};
    const result = parseAmount(v, 'amount', errors);
    expect(errors).toEqual({});
    return result;
  };
  const bad = (v: unknown) => {
    const errors: FieldErrors = {};
    expect(parseAmount(v, 'amount', errors)).toBeNull();
    return errors.amount;
  };

  it('returns exactly two decimals for numbers and decimal strings', () => {
    expect(ok(1250)).toBe('1250.00');
    expect(ok(1250.5)).toBe('1250.50');
    expect(ok(0)).toBe('0.00');
    expect(ok(0.01)).toBe('0.01');
    expect(ok('1250')).toBe('1250.00');
    expect(ok('1250.5')).toBe('1250.50');
    expect(ok(' 0012.30 ')).toBe('12.30');
  });

  it('treats null and undefined as not given', () => {
    expect(ok(null)).toBeNull();
    expect(ok(undefined)).toBeNull();
  });

  it('rejects negative amounts', () => {
    expect(bad(-1)).toEqual([messages.amountMin]);
    expect(bad(-0.01)).toEqual([messages.amountMin]);
    expect(bad('-0.01')).toEqual([messages.amountMin]);
  });

  it('rejects more than two decimal places', () => {
    expect(bad(12.345)).toEqual([messages.amountDecimals]);
    expect(bad('12.345')).toEqual([messages.amountDecimals]);
    expect(bad('12.300')).toEqual([messages.amountDecimals]);
    expect(bad(1e-7)).toEqual([messages.amountDecimals]);
  });

  it('accepts 9999999999.99 and rejects anything larger', () => {
    expect(ok(9999999999.99)).toBe('9999999999.99');
    expect(ok('9999999999.99')).toBe('9999999999.99');
    expect(bad(10000000000)).toEqual([messages.amountMax]);
    expect(bad('10000000000')).toEqual([messages.amountMax]);
    expect(bad('99999999999999999999.00')).toEqual([messages.amountMax]);
    expect(bad(1e21)).toEqual([messages.amountMax]);
  });

  it('rejects what is not a number', () => {
    for (const v of ['abc', '1,250', '1e3', '', '.5', true, {}, []])
      expect(bad(v), JSON.stringify(v)).toEqual(['The amount field must be a number.']);
    expect(bad('1,5')).toEqual(['The amount must use a dot as the decimal separator (1.5).']);
  });
});
