import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

import { isDatabaseUnavailable } from '../../db/db';
import { messages } from '../../domain/claims/claim';
import { AppError, type ErrorCode, type FieldErrors } from '../../domain/errors';

const STATUS: Record<ErrorCode, number> = {
  NOT_FOUND: 404,
  CONFLICT: 409,
  VALIDATION_FAILED: 422,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  UNAVAILABLE: 503,
  INTERNAL: 500,
};

type AjvIssue = { keyword: string; instancePath: string; params: Record<string, unknown>; message?: string };

/** Turns ajv issues into DECISIONS.md's `errors`: dotted field paths, messages from the shared catalogue. */
export function fieldErrorsFromAjv(issues: AjvIssue[]): FieldErrors {
  const errors: FieldErrors = {};
  for (const issue of issues) {
    let field = issue.instancePath.slice(1).replaceAll('/', '.');
    let message: string;
    switch (issue.keyword) {
      case 'required':
        field = [field, String(issue.params.missingProperty)].filter(Boolean).join('.');
        message = messages.required(field);
        break;
      case 'maxLength':
        message = messages.maxLength(field, Number(issue.params.limit));
        break;
      case 'minLength':
        message = messages.required(field);
        break;
      case 'enum':
        message = messages.oneOf(field, (issue.params.allowedValues as unknown[]).filter((v) => v !== null).map(String));
        break;
      case 'minItems':
        message = messages.minItems(field, Number(issue.params.limit));
        break;
      case 'maxItems':
        message = messages.maxItems(field, Number(issue.params.limit));
        break;
      case 'minimum':
        message = messages.min(field, Number(issue.params.limit));
        break;
      case 'maximum':
        message = messages.max(field, Number(issue.params.limit));
        break;
      case 'type': {
        const type = String(issue.params.type);
        if (field === '') message = 'The request body must be a JSON object.';
        else if (type.startsWith('boolean')) message = messages.boolean(field);
        else if (type.startsWith('number') || type.startsWith('integer')) message = messages.number(field);
        else if (type.startsWith('array')) message = messages.array(field);
        else if (type.startsWith('object')) message = messages.object(field);
        else message = messages.string(field);
        break;
      }
      default:
        message = `The ${messages.label(field || 'body')} field is invalid.`;
    }
    const list = (errors[field || 'body'] ??= []);
    if (!list.includes(message)) list.push(message);
  }
  return errors;
}

/**
 * One error body everywhere under /api/v1: `{ message, errors? }`. Unexpected errors are logged once
 * and answered with a generic 500: no stack, no SQL, no input echoed.
 */
export const errorHandlerPlugin = fp(
  async (app: FastifyInstance) => {
    app.setErrorHandler((err: FastifyError | AppError, request, reply) => {
      if (answerDatabaseUnavailable(err, request, reply)) return reply;
      if (err instanceof AppError) {
        const status = STATUS[err.code];
        if (status >= 500) request.log.error({ err }, 'request failed');
        return reply.status(status).send(err.fields ? { message: err.message, errors: err.fields } : { message: err.message });
      }
      if (err.validation) {
        const errors = fieldErrorsFromAjv(err.validation as AjvIssue[]);
        const first = Object.values(errors)[0]?.[0] ?? 'The given data was invalid.';
        return reply.status(422).send({ message: first, errors });
      }
      const status = err.statusCode ?? 500;
      if (status === 429) return reply.status(429).send({ message: 'Too many requests. Try again later.' });
      if (status >= 400 && status < 500) {
        request.log.info({ code: err.code }, 'request rejected');
        return reply.status(status).send({ message: clientMessage(err) });
      }
      request.log.error({ err }, 'request failed');
      return reply.status(500).send({ message: 'Server error.' });
    });
    app.setNotFoundHandler((request, reply) => {
      reply.status(404).send({ message: `No route for ${request.method} ${request.url.split('?')[0]}.` });
    });
  },
  { name: 'error-handler' },
);

/** Seconds a client is asked to wait after the database was unreachable. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

/**
 * A lost or refused database connection (a restart, a failover, a network cut) is answered as
 * what it is: 503 with Retry-After, logged as a warning without SQL, not a 500 "Server error.".
 */
function answerDatabaseUnavailable(err: unknown, request: FastifyRequest, reply: FastifyReply): boolean {
  if (!isDatabaseUnavailable(err)) return false;
  request.log.warn({ err }, 'database unavailable');
  void reply
    .status(503)
    .header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS))
    .send({ message: 'The database (or another service this request needs) cannot be reached right now. Try again shortly.' });
  return true;
}

/** Fastify's own 4xx messages, kept short and without echoing input. */
function clientMessage(err: FastifyError): string {
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'The request body is not valid JSON.';
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'Unsupported Content-Type; send application/json.';
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return 'The request body is too large.';
    default:
      return err.statusCode === 400 ? 'Bad request.' : 'The request could not be processed.';
  }
}
