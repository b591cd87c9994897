import { AUDIT_ACTIONS } from '../../domain/audit/audit';
import { pageMeta, pageQuery } from './common';

/** An audit event (named `AuditEvent` in the OpenAPI document). Never holds a token value, password, second-factor secret or document number. */
export const auditEventSchema = {
  $id: 'AuditEvent',
  type: 'object',
  properties: {
    id: { type: 'string', format: 'uuid' },
    action: { type: 'string', enum: AUDIT_ACTIONS, examples: ['token.created'] },
    actor: {
      type: 'object',
      properties: {
        type: { type: 'string', enum: ['person', 'token', 'operator', 'system'] },
        id: { type: ['string', 'null'], description: "The person's or token's id; null for the command line and the service" },
        name: { type: 'string', description: "A person's email, a token's name, or `command line`" },
      },
      required: ['type', 'id', 'name'],
    },
    target: {
      type: ['object', 'null'],
      properties: {
        type: { type: 'string', examples: ['token'] },
        id: { type: ['string', 'null'] },
        name: { type: ['string', 'null'] },
      },
      required: ['type', 'id', 'name'],
    },
    ip: { type: ['string', 'null'], description: 'The client address of the request; null for the command line' },
    request_id: { type: ['string', 'null'], description: 'The x-request-id of the request; null for the command line' },
    created_at: { type: 'string', format: 'date-time', examples: ['2026-11-21T10:15:30+00:00'] },
  },
  required: ['id', 'action', 'actor', 'target', 'ip', 'request_id', 'created_at'],
  examples: [
    {
      id: '0193a1b2-7c3d-7e4f-8a5b-6c7d8e9f0a1b',
      action: 'token.created',
      actor: { type: 'person', id: '0193a1b2-0000-7000-8000-000000000001', name: 'admin@insurer.example' },
      target: { type: 'token', id: '0193a1b2-0000-7000-8000-000000000002', name: 'claims system' },
      ip: '203.0.113.7',
      request_id: '5f0c6a7e-1b2c-4d3e-8f90-a1b2c3d4e5f6',
      created_at: '2026-11-21T10:15:30+00:00',
    },
  ],
} as const;

export const listAuditEventsQuery = {
  type: 'object',
  properties: {
    ...pageQuery.properties,
    action: { type: 'string', enum: AUDIT_ACTIONS, description: 'Only events of this action' },
  },
  additionalProperties: false,
} as const;

export const auditEventPage = {
  type: 'object',
  properties: { data: { type: 'array', items: { $ref: 'AuditEvent#' } }, meta: pageMeta },
  required: ['data', 'meta'],
} as const;
