import type { FastifyInstance } from 'fastify';

import { publishedInput } from '../../domain/claims/claim-schema';
import { ERROR_CODES } from '../../domain/errors';
import { GZIP_MAX_RATIO } from '../../domain/uploads/upload';

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
  429: {
    description:
      "Over the token's rate limit, or the address's failed authentications (rate_limited), with Retry-After; a submission of a company past its hour's identity mismatches (identity_check_limited)",
    ...errorBody,
  },
  500: { description: 'Unexpected server error (server_error)', ...errorBody },
  503: {
    description:
      'The database or another service the request needs cannot be reached (service_unavailable), or a write was refused because ' +
      "the database's disk is full (storage_full); with Retry-After",
    ...errorBody,
  },
} as const;

/** The answers of an upload route beyond commonErrors and bodyErrors. */
export const uploadErrors = {
  415: {
    description:
      'The body is not multipart/form-data, or its Content-Encoding is neither gzip nor identity (unsupported_media_type; ' +
      'the answer carries `Accept-Encoding: gzip`); nothing was read',
    ...errorBody,
    headers: {
      'accept-encoding': { type: 'string', description: 'On a refused Content-Encoding: `gzip`, the encoding an upload may use.' },
    },
  },
  408: { description: 'The upload was sent too slowly and was cut off (upload_too_slow); nothing was stored', ...errorBody },
  503: {
    description:
      'Every upload slot of the server is taken (too_many_uploads), the file storage cannot be reached (storage_unavailable), ' +
      "the queue or the database is unavailable (service_unavailable) or the database's disk is full (storage_full); with " +
      'Retry-After; nothing was stored',
    ...errorBody,
  },
  507: { description: 'No storage space is left for the file (insufficient_storage), with Retry-After; nothing was stored', ...errorBody },
} as const;

/** The error answers of a route that takes a body, besides commonErrors. */
export const bodyErrors = {
  413: { description: 'The body is larger than the route accepts (payload_too_large)', ...errorBody },
} as const;

/** A response header as an OpenAPI response documents it (see documentHeaders). */
type HeaderDoc = { type: 'string' | 'integer'; description: string };

/** `Location` of an answer that names a resource: where to read it. */
export const locationHeader = { location: { type: 'string', description: 'The path of the resource to read (GET).' } } as const;

/** `Idempotent-Replayed` of every answer of a route that takes an Idempotency-Key. */
const replayedHeader: Record<string, HeaderDoc> = {
  'idempotent-replayed': {
    type: 'string',
    description: '`true` when this answer is the replay of an earlier request with the same Idempotency-Key (nothing was written again).',
  },
};

/** The headers the API sends on every answer, or on every answer of one status. */
const EVERY_ANSWER: Record<string, HeaderDoc> = {
  'x-request-id': { type: 'string', description: "The request's id, also `request_id` in error bodies and on the server's log lines." },
  // On every answer to a token (not on a 401), while the token has a rate limit (RATE_LIMIT_PER_MINUTE, or its company's own).
  'ratelimit-limit': { type: 'integer', description: "The token's requests a minute (a batch look-up counts one per plate)." },
  'ratelimit-remaining': { type: 'integer', description: 'Requests left in the current minute.' },
  'ratelimit-reset': { type: 'integer', description: 'Seconds until the current minute ends and the budget is whole again.' },
};
const BY_STATUS: Record<string, Record<string, HeaderDoc>> = {
  '401': { 'www-authenticate': { type: 'string', description: 'How to authenticate: `Bearer`, with `error` when a token was refused.' } },
  '429': { 'retry-after': { type: 'integer', description: 'Seconds to wait before trying again.' } },
  '503': { 'retry-after': { type: 'integer', description: 'Seconds to wait before trying again.' } },
  '507': { 'retry-after': { type: 'integer', description: 'Seconds to wait before trying again.' } },
};

/**
 * The response headers of every documented answer of an API route: the request id on all, the
 * status's own (WWW-Authenticate on 401, Retry-After on 429 and 503), Idempotent-Replayed on
 * every answer of a route that takes an Idempotency-Key, and those a route declares in its
 * response (`headers`, e.g. Location). Used as @fastify/swagger's `transform`, so that each header
 * is declared once here rather than on every route.
 */
export function documentHeaders<S extends { response?: unknown; headers?: unknown }>(schema: S): S {
  if (!schema.response) return schema;
  const idempotent = Boolean((schema.headers as { properties?: Record<string, unknown> } | undefined)?.properties?.['idempotency-key']);
  const response: Record<string, unknown> = {};
  for (const [status, answer] of Object.entries(schema.response as Record<string, object>)) {
    const own = (answer as { headers?: Record<string, HeaderDoc> }).headers ?? {};
    response[status] = { ...answer, headers: { ...EVERY_ANSWER, ...BY_STATUS[status], ...(idempotent ? replayedHeader : {}), ...own } };
  }
  return { ...schema, response };
}

/**
 * An API route's schema as the OpenAPI document shows it (@fastify/swagger's `transform`): its
 * body with every rule the server enforces (the domain's publishedInput), its answers' headers
 * (documentHeaders). The server validates with the route's own schema, whose messages are the
 * domain's.
 */
export function documentRoute<S extends { body?: unknown; response?: unknown; headers?: unknown }>(schema: S): S {
  return documentHeaders(schema.body === undefined ? schema : { ...schema, body: publishedInput(schema.body) });
}

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

/** The Content-Encoding request header of the upload routes, as an OpenAPI parameter. */
export const contentEncodingHeader = {
  type: 'object',
  properties: {
    'content-encoding': {
      type: 'string',
      enum: ['gzip', 'identity'],
      description:
        '`gzip`: the whole multipart body is gzip-compressed; it is decompressed as it arrives, IMPORT_MAX_BYTES counting the ' +
        `decompressed file, and a body that expands more than ${GZIP_MAX_RATIO} times (past its first MB) is refused with 422 as a ` +
        'decompression bomb. Any other encoding: 415.',
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
