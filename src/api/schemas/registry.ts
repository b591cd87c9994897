import { personSearchSchema, purposeSchema } from '../../domain/claims/claim-schema';
import { INDICATOR_NAMES, LOOKUP_KINDS, MAX_NETWORK_EDGES } from '../../domain/registry/registry';
import { claimSchema, searchResult } from './claims';
import { pageMeta } from './common';

export const matchesQuery = {
  type: 'object',
  properties: { purpose: { ...purposeSchema, type: 'string', examples: ['New claim 2026-1183: checking the claimant'] } },
} as const;

const indicatorSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', enum: INDICATOR_NAMES },
    reason: {
      type: 'string',
      examples: ['The person has 3 claims dated in the 24 months up to 2026-03-14 (3 or more), this one included.'],
    },
  },
  required: ['name', 'reason'],
} as const;

/** A claim of another company as a plate search shows it, with what it shares with yours. */
const matchedClaim = {
  type: 'object',
  properties: {
    ...claimSchema.properties,
    matched_on: {
      type: 'array',
      items: { type: 'string', enum: ['vehicle_registration', 'client'] },
      examples: [['vehicle_registration', 'client']],
    },
  },
  required: [...claimSchema.required, 'matched_on'],
} as const;

export const matchesResult = {
  type: 'object',
  properties: {
    data: {
      type: 'object',
      properties: {
        matches: { type: 'array', items: matchedClaim },
        indicators: { type: 'array', items: indicatorSchema },
      },
      required: ['matches', 'indicators'],
    },
  },
  required: ['data'],
} as const;

/** Declared in the domain (one schema for the API and the rules); see ./claims.ts. */
export const searchByPersonBody = personSearchSchema;

export const searchByPersonResult = searchResult;

export const lookupPage = {
  type: 'object',
  properties: {
    data: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          id: { type: 'string', format: 'uuid' },
          kind: { type: 'string', enum: LOOKUP_KINDS },
          vehicle_registration: { type: ['string', 'null'], examples: ['AB123C'] },
          claim_id: { type: ['string', 'null'], format: 'uuid' },
          result_count: { type: 'integer', examples: [2] },
          purpose: { type: ['string', 'null'] },
          created_at: { type: 'string', format: 'date-time', examples: ['2026-11-21T10:15:30+00:00'] },
        },
        required: ['id', 'kind', 'vehicle_registration', 'claim_id', 'result_count', 'purpose', 'created_at'],
      },
    },
    meta: pageMeta,
  },
  required: ['data', 'meta'],
} as const;

export const claimLookupPage = {
  type: 'object',
  properties: {
    data: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          company_name: { type: 'string', examples: ['Baltic Mutual'] },
          kind: { type: 'string', enum: LOOKUP_KINDS },
          created_at: { type: 'string', format: 'date-time', examples: ['2026-11-21T10:15:30+00:00'] },
        },
        required: ['company_name', 'kind', 'created_at'],
      },
    },
    meta: pageMeta,
  },
  required: ['data', 'meta'],
} as const;

/** The incident of a claim (named `Incident` in the OpenAPI document). */
export const incidentSchema = {
  $id: 'Incident',
  type: 'object',
  properties: {
    claims: {
      type: 'array',
      description:
        "The other companies' claims dated at most 1 day from yours on its plate or its person, within the search window, " +
        'oldest claim date first, as a plate search shows them',
      items: matchedClaim,
    },
    companies: {
      type: 'integer',
      minimum: 1,
      description: 'The companies with a claim of the incident, yours included (1: your claim has no incident)',
      examples: [2],
    },
  },
  required: ['claims', 'companies'],
} as const;

export const incidentEnvelope = { type: 'object', properties: { data: { $ref: 'Incident#' } }, required: ['data'] } as const;

/** The network around a claim (named `Network` in the OpenAPI document). */
export const networkSchema = {
  $id: 'Network',
  type: 'object',
  description:
    'The persons and vehicles within two steps of your claim (its person and plate, then the persons and plates of every claim ' +
    'within the search window, of any company, on that plate or of that person), and the claims joining them. The counts ' +
    `include your claim and your company, and are never cut; at most ${MAX_NETWORK_EDGES} edges are listed, your claim first.`,
  properties: {
    persons: { type: 'integer', minimum: 1, examples: [3] },
    plates: { type: 'integer', minimum: 1, examples: [2] },
    claims: { type: 'integer', minimum: 1, examples: [4] },
    companies: { type: 'integer', minimum: 1, examples: [2] },
    edges: {
      type: 'array',
      maxItems: MAX_NETWORK_EDGES,
      description: 'One per claim: the claim joins its person (client_id) and its vehicle; ids and the plate, never a name',
      items: {
        type: 'object',
        properties: {
          claim_id: { type: 'string', format: 'uuid' },
          vehicle_registration: { type: 'string', examples: ['AB123C'] },
          client_id: { type: 'string', format: 'uuid' },
        },
        required: ['claim_id', 'vehicle_registration', 'client_id'],
      },
    },
  },
  required: ['persons', 'plates', 'claims', 'companies', 'edges'],
} as const;

export const networkEnvelope = { type: 'object', properties: { data: { $ref: 'Network#' } }, required: ['data'] } as const;
