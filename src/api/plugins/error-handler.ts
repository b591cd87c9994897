import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

import { DATABASE_RETRY_AFTER_SECONDS, isDatabaseUnavailable } from '../../db/db';
import { AppError, type ErrorCode, type FieldErrors, type PublicErrorCode } from '../../domain/errors';
import { allInputErrors } from '../../domain/input-errors';
import { fieldErrorsOf } from '../../domain/validation';
import { conditionOf } from '../../http-conditions';

const STATUS: Record<ErrorCode, number> = {
  NOT_FOUND: 404,
  CONFLICT: 409,
  VALIDATION_FAILED: 422,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  UNAVAILABLE: 503,
  TIMEOUT: 408,
  UNSUPPORTED_MEDIA_TYPE: 415,
  TOO_MANY_REQUESTS: 429,
  INTERNAL: 500,
};

const CODE_OF_KIND: Record<ErrorCode, PublicErrorCode> = {
  NOT_FOUND: 'not_found',
  CONFLICT: 'conflict',
  VALIDATION_FAILED: 'validation_failed',
  UNAUTHORIZED: 'unauthenticated',
  FORBIDDEN: 'forbidden',
  UNAVAILABLE: 'service_unavailable',
  TIMEOUT: 'upload_too_slow',
  UNSUPPORTED_MEDIA_TYPE: 'unsupported_media_type',
  TOO_MANY_REQUESTS: 'rate_limited',
  INTERNAL: 'server_error',
};

/** Sends the one error body of the API: `{ message, code, request_id, errors? }`; a 401 says how to authenticate. */
export function sendError(
  request: FastifyRequest,
  reply: FastifyReply,
  status: number,
  code: PublicErrorCode,
  message: string,
  errors?: FieldErrors,
): FastifyReply {
  if (status === 401 && !reply.hasHeader('www-authenticate')) reply.header('www-authenticate', 'Bearer');
  return reply.status(status).send({ message, code, request_id: request.id, ...(errors ? { errors } : {}) });
}

/**
 * One error body everywhere under /api/v1: `{ message, code, request_id, errors? }`. Unexpected
 * errors are logged once and answered with a generic 500: no stack, no SQL, no input echoed.
 */
export const errorHandlerPlugin = fp(
  async (app: FastifyInstance) => {
    app.setErrorHandler((err: FastifyError | AppError, request, reply) => {
      // A full disk, an unreachable file storage: answered as what they are (src/http-conditions.ts).
      const condition = conditionOf(err, request);
      if (condition) {
        reply.header('retry-after', String(condition.retryAfter));
        return sendError(request, reply, condition.status, condition.code, condition.message);
      }
      if (answerDatabaseUnavailable(err, request, reply)) return reply;
      if (err instanceof AppError) {
        const status = STATUS[err.code];
        if (status >= 500) request.log.error({ err }, 'request failed');
        // A sender cut off (upload_too_slow): its socket is not kept for another request.
        if (status === 408) reply.header('connection', 'close');
        return sendError(request, reply, status, err.reason ?? CODE_OF_KIND[err.code], err.message, err.fields);
      }
      if (err.validation) {
        // The same table as the CSV rows' and the forms' (src/domain/validation.ts); a body's
        // domain rules too, so that one answer names every field.
        const errors = (err.validationContext === 'body' && allBodyErrors(app, request)) || fieldErrorsOf(err.validation);
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

/** Every error of the request's body, the domain's rules' with its schema's (undefined: the schema's are all). */
function allBodyErrors(app: FastifyInstance, request: FastifyRequest): FieldErrors | undefined {
  const errors = allInputErrors(request.routeOptions.schema?.body, request.body, app.deps.today());
  return errors && Object.keys(errors).length > 0 ? errors : undefined;
}

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
