import { ALERT_KINDS } from '../../domain/alerts/alerts';
import { CLAIM_STATUSES } from '../../domain/claims/claim';
import { CLAIM_EXAMPLE } from '../../domain/claims/claim-schema';
import { pageMeta, pageQuery } from './common';

/**
 * An alert (named `Alert` in the OpenAPI document): a match (`claim_id` your claim, `matched_on`,
 * `same_incident`)
 * or a status change (`claim_id` null, `from`, `to`); `matched_claim` is the other company's claim
 * as a plate search shows it.
 */
export const alertSchema = {
  $id: 'Alert',
  type: 'object',
  properties: {
    id: { type: 'string', format: 'uuid' },
    kind: { type: 'string', enum: ALERT_KINDS, examples: ['match'] },
    claim_id: {
      type: ['string', 'null'],
      format: 'uuid',
      description: 'Your own claim that the other claim matched (match); null for a status change',
    },
    matched_claim: { $ref: 'Claim#' },
    matched_on: {
      type: 'array',
      description: 'Match only: what the two claims share',
      items: { type: 'string', enum: ['vehicle_registration', 'client'] },
      examples: [['vehicle_registration']],
    },
    same_incident: {
      type: 'boolean',
      description:
        'Match only: true when the two claims are of one incident (claim dates at most 1 day apart), as GET /claims/{id}/incident shows it',
      examples: [true],
    },
    from: { type: 'string', enum: CLAIM_STATUSES, description: 'Status change only: the status before', examples: ['filed'] },
    to: { type: 'string', enum: CLAIM_STATUSES, description: 'Status change only: the new status', examples: ['disputed'] },
    created_at: { type: 'string', format: 'date-time', examples: ['2026-11-21T10:15:30+00:00'] },
  },
  required: ['id', 'kind', 'claim_id', 'matched_claim', 'created_at'],
  examples: [
    {
      id: '0193a1b2-7c3d-7e4f-8a5b-6c7d8e9f0a1b',
      kind: 'match',
      claim_id: '0193a1b2-0000-7000-8000-000000000001',
      matched_claim: CLAIM_EXAMPLE,
      matched_on: ['vehicle_registration'],
      same_incident: true,
      created_at: '2026-11-21T10:15:30+00:00',
    },
  ],
} as const;

export const listAlertsQuery = {
  type: 'object',
  properties: {
    ...pageQuery.properties,
    claim_id: { type: 'string', format: 'uuid', description: 'Only the alerts of this claim of yours' },
  },
} as const;

export const alertPage = {
  type: 'object',
  properties: { data: { type: 'array', items: { $ref: 'Alert#' } }, meta: pageMeta },
  required: ['data', 'meta'],
} as const;
