import { personSearchSchema, purposeSchema } from '../../domain/claims/claim-schema';
import { LOOKUP_KINDS } from '../../domain/registry/registry';
import { claimSchema, searchResult } from './claims';
import { pageMeta } from './common';

export const matchesQuery = {
  type: 'object',
  properties: { purpose: { ...purposeSchema, type: 'string', examples: ['New claim 2026-1183: checking the claimant'] } },
} as const;

const indicatorSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', enum: ['repeat_claimant', 'plate_multi_company', 'early_claim'] },
    reason: {
      type: 'string',
      examples: ['The person has 3 claims dated in the 24 months up to 2026-03-14 (3 or more), this one included.'],
    },
  },
  required: ['name', 'reason'],
} as const;

export const matchesResult = {
  type: 'object',
  properties: {
    data: {
      type: 'object',
      properties: {
        matches: {
          type: 'array',
          items: {
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
          },
        },
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
