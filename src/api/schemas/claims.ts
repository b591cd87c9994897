import { CLAIM_SOURCES, CLAIM_STATUSES, CLAIM_TYPES, DOCUMENT_TYPES, LIMITS } from '../../domain/claims/claim';
import { pageMeta, pageQuery } from './common';

const isoDate = { type: 'string', maxLength: 10, examples: ['2026-03-14'] } as const;

/** The client of a claim as the API returns it: identity document types only, never numbers. */
export const clientSchema = {
  $id: 'Client',
  type: 'object',
  properties: {
    id: { type: 'string', format: 'uuid' },
    first_name: { type: 'string' },
    last_name: { type: 'string' },
    date_of_birth: { type: 'string', examples: ['1985-06-02'] },
    id_documents: {
      type: 'array',
      items: { type: 'object', properties: { type: { type: 'string', enum: DOCUMENT_TYPES } }, required: ['type'] },
    },
  },
  required: ['id', 'first_name', 'last_name', 'date_of_birth', 'id_documents'],
} as const;

/** A claim as the API returns it (named `Claim` in the OpenAPI document). */
export const claimSchema = {
  $id: 'Claim',
  type: 'object',
  properties: {
    id: { type: 'string', format: 'uuid' },
    client: { $ref: 'Client#' },
    claim_date: { type: 'string', examples: ['2026-03-14'] },
    claim_type: { type: ['string', 'null'], enum: [...CLAIM_TYPES, null] },
    amount: { type: ['string', 'null'], examples: ['1250.00'] },
    currency: { type: 'string', enum: ['EUR'] },
    is_at_fault: { type: ['boolean', 'null'] },
    vehicle_registration: { type: 'string', examples: ['AB123C'] },
    source: { type: 'string', enum: CLAIM_SOURCES },
    status: { type: 'string', enum: CLAIM_STATUSES },
    company_name: { type: 'string' },
    created_at: { type: 'string', format: 'date-time', examples: ['2026-11-21T10:15:30+00:00'] },
  },
  required: [
    'id',
    'client',
    'claim_date',
    'claim_type',
    'amount',
    'currency',
    'is_at_fault',
    'vehicle_registration',
    'source',
    'status',
    'company_name',
    'created_at',
  ],
} as const;

export const claimEnvelope = { type: 'object', properties: { data: { $ref: 'Claim#' } }, required: ['data'] } as const;

/** The identity documents of a person, as a submission and a person search take them. */
export const idDocuments = {
  type: 'array',
  minItems: 1,
  maxItems: LIMITS.maxDocuments,
  items: {
    type: 'object',
    required: ['type', 'number'],
    properties: {
      type: { type: 'string', enum: DOCUMENT_TYPES },
      number: {
        type: 'string',
        maxLength: LIMITS.documentNumberMaxLength,
        description: 'A country prefix such as "LT-" is stripped before matching. Never returned, never logged.',
        examples: ['LT-39001010000'],
      },
    },
  },
} as const;

/**
 * Structure only (types, required fields, enums, lengths); the rules that need today's date or
 * normalization live in the domain, shared with the CSV import. Unknown fields are ignored.
 */
export const submitClaimBody = {
  type: 'object',
  required: ['client', 'claim_date', 'vehicle_registration'],
  properties: {
    client: {
      type: 'object',
      required: ['first_name', 'last_name', 'date_of_birth', 'id_documents'],
      properties: {
        first_name: { type: 'string', maxLength: LIMITS.nameMaxLength, examples: ['Ona'] },
        last_name: { type: 'string', maxLength: LIMITS.nameMaxLength, examples: ['Petraitė'] },
        date_of_birth: { ...isoDate, description: 'Before today.', examples: ['1985-06-02'] },
        id_documents: idDocuments,
      },
    },
    claim_date: { ...isoDate, description: 'Not in the future; within the last 3 years.' },
    vehicle_registration: {
      type: 'string',
      maxLength: LIMITS.plateMaxLength,
      description: 'Spaces, dots and dashes are removed and the value upper-cased.',
      examples: ['ab-123 c'],
    },
    claim_type: { type: ['string', 'null'], enum: [...CLAIM_TYPES, null] },
    amount: {
      type: ['number', 'string', 'null'],
      description: '>= 0, at most 2 decimals, at most 9999999999.99; returned as a string.',
      examples: [1250],
    },
    currency: { type: ['string', 'null'], description: 'Only EUR; defaults to EUR.', examples: ['EUR'] },
    is_at_fault: { type: ['boolean', 'null'] },
    status: { type: ['string', 'null'], enum: [...CLAIM_STATUSES, null], description: 'Defaults to filed (also when null).' },
  },
} as const;

export const updateStatusBody = {
  type: 'object',
  required: ['status'],
  properties: { status: { type: 'string', enum: CLAIM_STATUSES, examples: ['under_investigation'] } },
} as const;

/**
 * Deliberately no `format: uuid` and no bound tighter than the router's maxParamLength (100): an
 * id that is not a claim's, UUID or not, is a 404 "Claim not found." (claim_not_found), never a 422.
 */
export const claimIdParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', maxLength: 2048, description: 'Claim UUID' } },
} as const;

export const searchByPlateBody = {
  type: 'object',
  required: ['vehicle_registration'],
  properties: {
    vehicle_registration: { type: 'string', maxLength: LIMITS.plateMaxLength, examples: ['AB-123.C'] },
    purpose: {
      type: ['string', 'null'],
      maxLength: 200,
      description: 'Why you look (at most 200 characters), kept in the look-up log; optional.',
      examples: ['New claim 2026-1183: checking the vehicle history'],
    },
  },
} as const;

export const searchResult = {
  type: 'object',
  properties: {
    data: { type: 'array', items: { $ref: 'Claim#' } },
    meta: {
      type: 'object',
      properties: { total_claims: { type: 'integer' }, query_period: { type: 'string', examples: ['3 years'] } },
      required: ['total_claims', 'query_period'],
    },
  },
  required: ['data', 'meta'],
} as const;

export const listClaimsQuery = {
  type: 'object',
  properties: {
    status: { type: 'string', enum: CLAIM_STATUSES },
    ...pageQuery.properties,
  },
} as const;

export const claimPage = {
  type: 'object',
  properties: {
    data: { type: 'array', items: { $ref: 'Claim#' } },
    meta: pageMeta,
  },
  required: ['data', 'meta'],
} as const;
