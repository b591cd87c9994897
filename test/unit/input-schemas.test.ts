import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';

import { validatorCompiler } from '../../src/app';
import { submitClaimBody } from '../../src/api/schemas/claims';
import { searchByPersonBody } from '../../src/api/schemas/registry';
import { validateClaimInput } from '../../src/domain/claims/claim';
import { claimInputSchema, LIMITS, personSearchSchema } from '../../src/domain/claims/claim-schema';
import { validatePersonQuery } from '../../src/domain/registry/registry';
import { compileInput, fieldErrorsOf, inSchemaOrder } from '../../src/domain/validation';

const TODAY = '2026-06-15';
const claim = (client: Record<string, unknown> = {}) => ({
  client: {
    first_name: 'Ona',
    last_name: 'Petraitė',
    date_of_birth: '1985-06-02',
    id_documents: [{ type: 'passport', number: 'P1' }],
    ...client,
  },
  claim_date: '2026-03-14',
  vehicle_registration: 'AB123C',
});

describe('one schema per input', () => {
  it('the API route validates a body with the domain’s compiled validator of the same schema object', async () => {
    expect(submitClaimBody).toBe(claimInputSchema);
    expect(searchByPersonBody).toBe(personSearchSchema);
    const app = Fastify();
    app.setValidatorCompiler(validatorCompiler());
    let used: unknown;
    app.post('/claims', { schema: { body: submitClaimBody } }, async (request) => {
      used = request.getValidationFunction('body');
      return {};
    });
    await app.inject({ method: 'POST', url: '/claims', payload: claim() });
    await app.close();
    expect(used).toBeTypeOf('function');
    expect(used).toBe(compileInput(claimInputSchema));
  });

  it('the name’s maximum length is the schema’s: every surface follows it', () => {
    expect(LIMITS.nameMaxLength).toBe(claimInputSchema.properties.client.properties.first_name.maxLength);
    const max = LIMITS.nameMaxLength;
    expect(validateClaimInput(claim({ first_name: 'a'.repeat(max) }), TODAY).errors).toEqual({});
    expect(validateClaimInput(claim({ first_name: 'a'.repeat(max + 1) }), TODAY).errors).toEqual({
      'client.first_name': [`The first name field must not be greater than ${max} characters.`],
    });
  });

  it('reports the schema’s errors and the domain’s rules together, in the order of the schema’s fields', () => {
    const body = { ...claim({ first_name: 7, date_of_birth: '2030-01-01' }), claim_date: '2099-01-01', currency: 'USD', status: 'open' };
    const { errors } = validateClaimInput(body, TODAY);
    expect(Object.keys(errors)).toEqual(['client.first_name', 'client.date_of_birth', 'claim_date', 'currency', 'status']);
    expect(
      inSchemaOrder(claimInputSchema, { status: ['s'], 'client.id_documents.1.type': ['b'], 'client.id_documents.0.number': ['a'] }),
    ).toEqual({
      'client.id_documents.0.number': ['a'],
      'client.id_documents.1.type': ['b'],
      status: ['s'],
    });
  });

  it('the person search goes through the same document schema and rules as a submission', () => {
    const docs = [
      { type: 'passport', number: '9'.repeat(LIMITS.documentNumberMaxLength + 1) },
      { type: 'visa', number: 'LT-' },
    ];
    expect(validatePersonQuery({ date_of_birth: '1990-01-01', id_documents: docs }).errors).toEqual({
      'id_documents.0.number': ['The document number field must not be greater than 255 characters.'],
      'id_documents.1.type': ['The document type field must be one of: passport, national_id, alien_registration.'],
      'id_documents.1.number': ['The document number must contain more than a country prefix.'],
    });
  });

  it('turns validator issues into the contract’s messages with dotted paths', () => {
    expect(
      fieldErrorsOf([
        { keyword: 'required', instancePath: '/client/id_documents/0', params: { missingProperty: 'number' } },
        { keyword: 'type', instancePath: '', params: { type: 'object' } },
        { keyword: 'maxItems', instancePath: '/client/id_documents', params: { limit: 10 } },
      ]),
    ).toEqual({
      'client.id_documents.0.number': ['The document number field is required.'],
      body: ['The request body must be a JSON object.'],
      'client.id_documents': ['The id documents field must not have more than 10 items.'],
    });
  });
});
