import type { FastifyInstance } from 'fastify';

import { ERROR_CODES } from '../../domain/errors';

/** Every error body of the API: a message for people, a stable code for programs, and the request's id. */
export const errorSchema = {
  $id: 'Error',
  type: 'object',
  properties: {
    message: { type: 'string', examples: ['Claim not found.'] },
    code: { type: 'string', enum: ERROR_CODES, examples: ['claim_not_found'] },
    request_id: { type: 'string', description: 'The x-request-id of the response, on the server log lines of this request' },
    errors: {
      type: 'object',
      description: 'Only for validation_failed: field path → messages',
      additionalProperties: { type: 'array', items: { type: 'string' } },
      examples: [{ claim_date: ['The claim date cannot be in the future.'] }],
    },
  },
  required: ['message', 'code', 'request_id'],
} as const;

/** Named component schemas of the OpenAPI document; routes point at them with `{ $ref: 'Name#' }`. */
export function addSharedSchemas(app: FastifyInstance, schemas: readonly { $id: string }[]): void {
  for (const schema of schemas) app.addSchema(schema);
}

/** An error answer of a route: `{ ...errorBody, description }`. */
export const errorBody = { $ref: 'Error#' } as const;
/** The same, for a 422 (the body then carries `errors`). */
export const validationErrorBody = errorBody;

/** Error responses every authenticated route can give; routes add 403/404/409 where they apply. */
export const commonErrors = {
  400: { description: 'The body is not valid JSON (invalid_json), or the request is malformed (bad_request)', ...errorBody },
  401: {
    description: 'Missing, malformed, unknown or revoked token (unauthenticated); the answer carries WWW-Authenticate: Bearer',
    ...errorBody,
  },
  415: { description: 'The body is not of a supported Content-Type (unsupported_media_type)', ...errorBody },
  422: { description: 'Validation failed (validation_failed): `errors` names each field', ...errorBody },
  429: { description: 'Too many requests (rate_limited), with Retry-After', ...errorBody },
  500: { description: 'Unexpected server error (server_error)', ...errorBody },
} as const;

/** The Idempotency-Key request header of the POST routes, as an OpenAPI parameter. */
export const idempotencyKeyHeader = {
  type: 'object',
  properties: {
    'idempotency-key': {
      type: 'string',
      description: 'Repeating a request with the same key within 24 hours returns the first response without writing again.',
    },
  },
} as const;

/** The Prefer request header (`respond-async`) of the import, as an OpenAPI parameter; combine with idempotencyKeyHeader. */
export const preferHeader = {
  type: 'object',
  properties: {
    prefer: {
      type: 'string',
      description: '`respond-async`: answer 202 with the import at once instead of waiting for its result.',
      examples: ['respond-async'],
    },
  },
} as const;

/** The query of every cursor-paged list: `cursor` (the previous page's next_cursor) and `limit`. */
export const pageQuery = {
  type: 'object',
  properties: {
    cursor: { type: 'string', maxLength: 200, description: 'next_cursor of the previous page' },
    limit: { type: 'integer', minimum: 1, maximum: 100, default: 25 },
  },
} as const;

/** The `meta` of every cursor-paged list: where the next page starts (null on the last). */
export const pageMeta = { type: 'object', properties: { next_cursor: { type: ['string', 'null'] } }, required: ['next_cursor'] } as const;
