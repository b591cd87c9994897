import {
  CLAIM_SOURCES,
  CLAIM_STATUSES,
  CLAIM_TYPES,
  claimInputSchema,
  DOCUMENT_TYPES,
  plateSearchSchema,
  statusChangeSchema,
} from '../../domain/claims/claim-schema';
import { pageMeta, pageQuery } from './common';

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

/**
 * The inputs are declared once, in the domain (src/domain/claims/claim-schema.ts), and these are
 * the very same objects: Fastify validates a body with the domain's compiled validator
 * (src/api/app.ts), the CSV rows and the dashboard's forms go through it too.
 */
export const submitClaimBody = claimInputSchema;
export const updateStatusBody = statusChangeSchema;
export const searchByPlateBody = plateSearchSchema;

/**
 * Deliberately no `format: uuid` and no bound tighter than the router's maxParamLength (100): an
 * id that is not a claim's, UUID or not, is a 404 "Claim not found." (claim_not_found), never a 422.
 */
export const claimIdParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', maxLength: 2048, description: 'Claim UUID' } },
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
