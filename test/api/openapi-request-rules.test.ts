import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { claimBody, createTestContext, submitClaim, type Company, type TestContext } from '../harness';

/**
 * The request bodies of the published OpenAPI document carry the rules the server enforces: for
 * each rule, a value the server refuses (422 naming the field) is refused by the document's schema
 * too, compiled as a generated client would (JSON Schema 2020-12, formats checked). And values the
 * server takes, the document takes.
 */
let ctx: TestContext;
let company: Company;
let claimId: string;
const validators = new Map<string, ValidateFunction>();
beforeAll(async () => {
  ctx = await createTestContext({ APP_TIMEZONE: 'UTC' });
  company = await ctx.newCompany();
  claimId = (await submitClaim(ctx, company)).id;
  const doc = (await ctx.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<object>();
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats.default(ajv);
  ajv.addSchema(doc, 'openapi.json');
  for (const [name, path, method] of OPERATIONS) {
    const pointer = `/paths/${path.replaceAll('/', '~1')}/${method}/requestBody/content/application~1json/schema`;
    validators.set(name, ajv.getSchema(`openapi.json#${pointer}`)!);
  }
});
afterAll(async () => ctx.close());

const OPERATIONS = [
  ['submit', '/api/v1/claims', 'post'],
  ['plate', '/api/v1/claims/search-by-plate', 'post'],
  ['person', '/api/v1/claims/search-by-person', 'post'],
  ['status', '/api/v1/claims/{id}/status', 'patch'],
] as const;
type Operation = (typeof OPERATIONS)[number][0];

/** A body the server takes, for each operation. */
function validBody(op: Operation): Record<string, unknown> {
  const claim = claimBody();
  if (op === 'submit') return claim;
  if (op === 'plate') return { vehicle_registration: claim.vehicle_registration, purpose: 'Checking' };
  if (op === 'person') return { date_of_birth: claim.client.date_of_birth, id_documents: claim.client.id_documents };
  return { status: 'settled' };
}

/** `body` with the value at the dotted path `field` replaced. */
function withValue(body: Record<string, unknown>, field: string, value: unknown): Record<string, unknown> {
  const copy = structuredClone(body);
  const keys = field.split('.');
  let at = copy;
  for (const k of keys.slice(0, -1)) at = at[k] as Record<string, unknown>;
  at[keys.at(-1)!] = value;
  return copy;
}

async function send(op: Operation, body: object) {
  const url = {
    submit: '/api/v1/claims',
    plate: '/api/v1/claims/search-by-plate',
    person: '/api/v1/claims/search-by-person',
    status: `/api/v1/claims/${claimId}/status`,
  }[op];
  return ctx.app.inject({ method: op === 'status' ? 'PATCH' : 'POST', url, headers: company.auth, payload: body });
}

/** [operation, field, a value the server refuses, the rule]. */
const REFUSED: [Operation, string, unknown, string][] = [
  ['submit', 'client.first_name', '   ', 'a name is not blank'],
  ['submit', 'client.first_name', 'On\u0000a', 'a name has no control character'],
  ['submit', 'client.last_name', 'Pe\u0007traitė', 'a name has no control character'],
  ['submit', 'client.last_name', 'x'.repeat(256), 'a name has at most 255 characters'],
  ['submit', 'client.date_of_birth', '1985-02-30', 'a date exists'],
  ['submit', 'client.date_of_birth', '1985-6-2', 'a date is YYYY-MM-DD'],
  ['submit', 'client.date_of_birth', '0000-01-01', 'a date is from year 1'],
  ['submit', 'client.id_documents.0.number', '  ', 'a document number is not blank'],
  ['submit', 'client.id_documents.0.number', 'LT-', 'a document number is more than a country prefix'],
  ['submit', 'client.id_documents.0.number', ' l t u - ', 'a document number is more than a country prefix'],
  ['submit', 'client.id_documents.0.type', 'visa', 'a document type is one of the list'],
  ['submit', 'client.id_documents', [], 'at least one document'],
  ['submit', 'claim_date', '2026-13-01', 'a date exists'],
  ['submit', 'claim_date', 'today', 'a date is YYYY-MM-DD'],
  ['submit', 'vehicle_registration', ' .- ', 'a plate has a letter or digit'],
  ['submit', 'vehicle_registration', 'AB#123', 'a plate is letters and digits'],
  ['submit', 'vehicle_registration', 'A'.repeat(21), 'a plate has at most 20 characters'],
  ['submit', 'amount', -1, 'an amount is at least 0'],
  ['submit', 'amount', 10_000_000_000, 'an amount is at most 9999999999.99'],
  ['submit', 'amount', '-0.01', 'an amount is at least 0'],
  ['submit', 'amount', '1.234', 'an amount has at most 2 decimals'],
  ['submit', 'amount', '10000000000', 'an amount is at most 9999999999.99'],
  ['submit', 'amount', '12,50', 'an amount is a decimal number'],
  ['submit', 'amount', '', 'an amount is a decimal number'],
  ['submit', 'amount', true, 'an amount is a number or a string'],
  ['submit', 'currency', 'USD', 'EUR only'],
  ['submit', 'claim_type', 'flood', 'a claim type is one of the list'],
  ['submit', 'status', 'open', 'a status is one of the list'],
  ['submit', 'is_at_fault', 'yes', 'at fault is a boolean'],
  ['plate', 'vehicle_registration', '...', 'a plate has a letter or digit'],
  ['plate', 'vehicle_registration', 'AB/123', 'a plate is letters and digits'],
  ['plate', 'purpose', 'Check\u0001', 'a purpose has no control character but tab and line breaks'],
  ['plate', 'purpose', 'x'.repeat(201), 'a purpose has at most 200 characters'],
  ['person', 'date_of_birth', '2000-02-30', 'a date exists'],
  ['person', 'id_documents.0.number', 'LTU-', 'a document number is more than a country prefix'],
  ['person', 'purpose', '\u001b[31m', 'a purpose has no control character but tab and line breaks'],
  ['status', 'status', 'gone', 'a status is one of the list'],
];

/** [operation, field, a value the server takes that a careless rule might refuse]. */
const TAKEN: [Operation, string, unknown][] = [
  ['submit', 'amount', 0.07],
  ['submit', 'amount', 9_999_999_999.99],
  ['submit', 'amount', ' 0012.5 '],
  ['submit', 'amount', '-0'],
  ['submit', 'amount', null],
  ['submit', 'currency', null],
  ['submit', 'client.first_name', '  Ona Marija  '],
  ['submit', 'client.id_documents.0.number', 'lt-39001010000'],
  ['submit', 'vehicle_registration', 'ab-123 ž.ß'],
  ['submit', 'claim_date', '2024-02-29'],
  ['plate', 'purpose', 'Claim 1183:\n\tchecking'],
  ['person', 'id_documents.0.number', 'LTU-X'],
];

describe('the published request schemas refuse what the server refuses', () => {
  it.each(REFUSED)('%s %s = %j (%s)', async (op, field, value) => {
    const body = withValue(validBody(op), field, value);
    const res = await send(op, body);
    expect(res.statusCode, res.body).toBe(422);
    expect(Object.keys(res.json<{ errors: object }>().errors)).toContain(field);
    expect(validators.get(op)!(body)).toBe(false);
  });

  it.each(TAKEN)('%s %s = %j is taken by both', async (op, field, value) => {
    const body = withValue(validBody(op), field, value);
    const res = await send(op, body);
    expect(res.statusCode, res.body).toBeLessThan(300);
    expect(validators.get(op)!(body), JSON.stringify(validators.get(op)!.errors)).toBe(true);
  });

  it('says in the description what a schema cannot: dates against today, the number of decimals of a JSON number', async () => {
    const doc = (await ctx.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<{
      paths: Record<string, Record<string, { requestBody: { content: Record<string, { schema: Schema }> } }>>;
    }>();
    type Schema = { properties: Record<string, Schema & { description?: string }> };
    const submit = doc.paths['/api/v1/claims']!.post!.requestBody.content['application/json']!.schema.properties;
    expect(submit.claim_date!.description).toMatch(/Not in the future; within the last 3 years/u);
    expect(submit.client!.properties.date_of_birth!.description).toMatch(/Before today/u);
    expect(submit.amount!.description).toMatch(/at most 2 decimals/u);
    // Each of them the server refuses, and the schema cannot: its description is what a client gets.
    for (const [field, value] of [
      ['claim_date', '2999-01-01'],
      ['client.date_of_birth', '2999-01-01'],
      ['amount', 1.234],
    ] as const) {
      const res = await send('submit', withValue(validBody('submit'), field, value));
      expect(res.statusCode, field).toBe(422);
    }
  });
});
