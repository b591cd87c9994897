import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

import { DATABASE_RETRY_AFTER_SECONDS, diskFullWhere, isDatabaseUnavailable } from '../../db/db';
import { AppError, type ErrorCode, type FieldErrors } from '../../domain/errors';
import { StorageUnavailable } from '../../domain/storage';
import { fieldErrorsOf } from '../../domain/validation';

const STATUS: Record<ErrorCode, number> = {
  NOT_FOUND: 404,
  CONFLICT: 409,
  VALIDATION_FAILED: 422,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  UNAVAILABLE: 503,
  TIMEOUT: 408,
  INTERNAL: 500,
};

/**
 * The stable `code` of every error body: programs branch on it, people read `message`. A case
 * with a code of its own (claim_not_found, import_finished, ...) names it in its AppError; any
 * other gets the code of its kind.
 */
export const ERROR_CODES = [
  'unauthenticated',
  'forbidden',
  'not_found',
  'claim_not_found',
  'import_not_found',
  'import_finished',
  'conflict',
  'idempotency_in_progress',
  'validation_failed',
  'invalid_json',
  'bad_request',
  'unsupported_media_type',
  'payload_too_large',
  'rate_limited',
  'service_unavailable',
  'storage_unavailable',
  'storage_full',
  'insufficient_storage',
  'too_many_uploads',
  'upload_too_slow',
  'server_error',
] as const;
export type PublicErrorCode = (typeof ERROR_CODES)[number];

const CODE_OF_KIND: Record<ErrorCode, PublicErrorCode> = {
  NOT_FOUND: 'not_found',
  CONFLICT: 'conflict',
  VALIDATION_FAILED: 'validation_failed',
  UNAUTHORIZED: 'unauthenticated',
  FORBIDDEN: 'forbidden',
  UNAVAILABLE: 'service_unavailable',
  TIMEOUT: 'upload_too_slow',
  INTERNAL: 'server_error',
};

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route reads an uploaded file: MAX_CONCURRENT_UPLOADS and the slow-sender limit apply, a full disk is a 507. */
    upload?: boolean;
  }
}

/** Seconds a client is asked to wait after a write refused for a full disk. */
export const DISK_FULL_RETRY_AFTER_SECONDS = 60;
/** Seconds a client is asked to wait after the file storage was unreachable. */
export const STORAGE_RETRY_AFTER_SECONDS = 5;

export const conditionMessages = {
  insufficientStorage: 'There is no storage space left for this file right now; nothing was stored. Try again later.',
  storageFull: 'The registry cannot write right now: its storage is full. Nothing was changed; try again later.',
  storageUnavailable: 'The file storage cannot be reached right now; nothing was stored. Try again shortly.',
} as const;

/**
 * The known conditions of what is under the service, answered as what they are rather than a
 * 500: a full disk (507 for an upload, 503 `storage_full` for any other write, counted and
 * logged as such) and an unreachable file storage (503 `storage_unavailable`, named as the
 * storage's, not the database's). Also used by the dashboard's error pages.
 */
export function conditionOf(
  err: unknown,
  request: FastifyRequest,
): { status: number; code: PublicErrorCode; message: string; retryAfter: number } | undefined {
  const where = diskFullWhere(err);
  if (where) {
    request.server.deps.diskFull.report(where, err);
    return request.routeOptions.config?.upload
      ? {
          status: 507,
          code: 'insufficient_storage',
          message: conditionMessages.insufficientStorage,
          retryAfter: DISK_FULL_RETRY_AFTER_SECONDS,
        }
      : { status: 503, code: 'storage_full', message: conditionMessages.storageFull, retryAfter: DISK_FULL_RETRY_AFTER_SECONDS };
  }
  if (err instanceof StorageUnavailable) {
    request.log.warn(
      { err: { message: err.message, cause: (err.cause as { code?: unknown } | undefined)?.code } },
      'file storage unavailable',
    );
    return {
      status: 503,
      code: 'storage_unavailable',
      message: conditionMessages.storageUnavailable,
      retryAfter: STORAGE_RETRY_AFTER_SECONDS,
    };
  }
  return undefined;
}

/** Sends the one error body of the API: `{ message, code, request_id, errors? }`; a 401 says how to authenticate. */
export function sendError(
  request: FastifyRequest,
  reply: FastifyReply,
  status: number,
  code: string,
  message: string,
  errors?: FieldErrors,
): FastifyReply {
  if (status === 401) reply.header('www-authenticate', 'Bearer');
  return reply.status(status).send({ message, code, request_id: request.id, ...(errors ? { errors } : {}) });
}

/**
 * One error body everywhere under /api/v1: `{ message, code, request_id, errors? }`. Unexpected
 * errors are logged once and answered with a generic 500: no stack, no SQL, no input echoed.
 */
export const errorHandlerPlugin = fp(
  async (app: FastifyInstance) => {
    app.setErrorHandler((err: FastifyError | AppError, request, reply) => {
      const condition = conditionOf(err, request);
      if (condition) {
        reply.header('retry-after', String(condition.retryAfter));
        return sendError(request, reply, condition.status, condition.code, condition.message);
      }
      if (answerDatabaseUnavailable(err, request, reply)) return reply;
      if (err instanceof AppError) {
        const status = STATUS[err.code];
        if (status >= 500) request.log.error({ err }, 'request failed');
        if (status === 408) reply.header('connection', 'close');
        return sendError(request, reply, status, err.reason ?? CODE_OF_KIND[err.code], err.message, err.fields);
      }
      if (err.validation) {
        // The same table as the CSV rows' and the forms' (src/domain/validation.ts).
        const errors = fieldErrorsOf(err.validation);
        const first = Object.values(errors)[0]?.[0] ?? 'The given data was invalid.';
        return sendError(request, reply, 422, 'validation_failed', first, errors);
      }
      const status = err.statusCode ?? 500;
      if (status === 429) return sendError(request, reply, 429, 'rate_limited', 'Too many requests. Try again later.');
      if (status >= 400 && status < 500) {
        request.log.info({ code: err.code }, 'request rejected');
        const { code, message } = clientError(err);
        return sendError(request, reply, status, code, message);
      }
      request.log.error({ err }, 'request failed');
      return sendError(request, reply, 500, 'server_error', 'Server error.');
    });
    app.setNotFoundHandler((request, reply) => {
      sendError(request, reply, 404, 'not_found', `No route for ${request.method} ${request.url.split('?')[0]}.`);
    });
  },
  { name: 'error-handler' },
);

/**
 * A lost or refused database connection (a restart, a failover, a network cut) is answered as
 * what it is: 503 with Retry-After, logged as a warning without SQL, not a 500 "Server error.".
 */
function answerDatabaseUnavailable(err: unknown, request: FastifyRequest, reply: FastifyReply): boolean {
  if (!isDatabaseUnavailable(err)) return false;
  request.log.warn({ err }, 'database unavailable');
  reply.header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS));
  void sendError(
    request,
    reply,
    503,
    'service_unavailable',
    'The database (or another service this request needs) cannot be reached right now. Try again shortly.',
  );
  return true;
}

/** Fastify's own 4xx errors, with a short message that echoes no input. */
function clientError(err: FastifyError): { code: PublicErrorCode; message: string } {
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { code: 'invalid_json', message: 'The request body is not valid JSON.' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { code: 'unsupported_media_type', message: 'Unsupported Content-Type; send application/json.' };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { code: 'payload_too_large', message: 'The request body is too large.' };
    default:
      return { code: 'bad_request', message: err.statusCode === 400 ? 'Bad request.' : 'The request could not be processed.' };
  }
}
