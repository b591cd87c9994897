import {
  CLAIM_STATUSES,
  claimAnswerSchema,
  claimInputSchema,
  clientAnswerSchema,
  plateSearchSchema,
  statusChangeSchema,
} from '../../domain/claims/claim-schema';
import { pageMeta, pageQuery } from './common';

/** The client of a claim as the API returns it (named `Client` in the OpenAPI document): the domain's declaration. */
export const clientSchema = { $id: 'Client', ...clientAnswerSchema } as const;

/** A claim as the API returns it (named `Claim` in the OpenAPI document): the domain's declaration, its client by name. */
export const claimSchema = {
  $id: 'Claim',
  ...claimAnswerSchema,
  properties: { ...claimAnswerSchema.properties, client: { $ref: 'Client#' } },
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
