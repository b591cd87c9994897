import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';

import { DATABASE_RETRY_AFTER_SECONDS, isDatabaseUnavailable } from '../db/db';
import { AppError, type ErrorCode } from '../domain/errors';
import { conditionOf } from '../http-conditions';
import { RoleError, wantsJson } from './context';
import { renderPage } from './render';

async function show(request: FastifyRequest, reply: FastifyReply, status: number, title: string, message: string) {
  if (wantsJson(request)) return reply.status(status).send({ message });
  return renderPage(reply, 'error', { title, message }, status);
}

/**
 * The page of each kind of AppError, every kind (the compiler checks it): its status and title.
 * INTERNAL has none: it is the generic "something went wrong" page, logged, with the reference.
 */
const APP_ERROR_PAGES: Record<ErrorCode, [number, string] | null> = {
  INTERNAL: null,
  NOT_FOUND: [404, 'Not found'],
  FORBIDDEN: [403, 'Not allowed'],
  VALIDATION_FAILED: [422, 'Please check what you sent'],
  CONFLICT: [409, 'Already exists'],
  UNAUTHORIZED: [401, 'Please sign in'],
  UNAVAILABLE: [503, 'Temporarily unavailable'],
  TIMEOUT: [408, 'The upload was too slow'],
  UNSUPPORTED_MEDIA_TYPE: [415, 'The upload was sent in a form the service does not take'],
  TOO_MANY_REQUESTS: [429, 'Too many identity mismatches'],
};

/**
 * Errors on dashboard pages become pages (or `{ message }` for the page scripts). Messages of
 * AppError are written for people and safe to show; anything unexpected is logged once and shown
 * as a generic page with the request id, never with a stack, SQL or the input.
 */
export async function webErrorHandler(err: FastifyError | AppError | RoleError, request: FastifyRequest, reply: FastifyReply) {
  if (err instanceof RoleError) return show(request, reply, 403, err.title, err.message);
  const page = err instanceof AppError ? APP_ERROR_PAGES[err.code] : null;
  if (page) return show(request, reply, page[0], page[1], err.message);
  // A full disk, an unreachable file storage: said as what they are (counted and logged there).
  const condition = conditionOf(err, request);
  if (condition) {
    reply.header('retry-after', String(condition.retryAfter));
    const title = condition.code === 'storage_unavailable' ? 'Temporarily unavailable' : 'Storage full';
    return show(request, reply, condition.status, title, condition.message);
  }
  // A lost database (a restart, a failover, a network cut): what it is, a 503 that says to try
  // again shortly, not "something went wrong".
  if (isDatabaseUnavailable(err)) {
    request.log.warn({ err }, 'database unavailable');
    reply.header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS));
    const message = 'The registry cannot reach its database right now. Nothing was changed; please try again in a moment.';
    return show(request, reply, 503, 'Temporarily unavailable', message);
  }
  const fe = err as FastifyError;
  if (typeof fe.code === 'string' && fe.code.startsWith('FST_CSRF_')) {
    request.log.info({ code: fe.code }, 'form rejected: CSRF token missing or invalid');
    if (request.url.split('?')[0] === '/login' && !wantsJson(request)) {
      return renderPage(reply, 'login', { email: '', next: '/', error: 'The sign-in form had expired. Please sign in again.' }, 403);
    }
    return show(
      request,
      reply,
      403,
      'The form has expired',
      'This form was opened too long ago, or did not come from this site. Go back, reload the page and try again.',
    );
  }
  const status = fe.statusCode ?? 500;
  if (status === 429) {
    return show(request, reply, 429, 'Too many attempts', 'Too many attempts in a short time. Wait a minute, then try again.');
  }
  if (status === 413 || fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return show(request, reply, 413, 'Too large', 'What you sent is too large.');
  }
  if (status >= 400 && status < 500) {
    request.log.info({ code: fe.code }, 'request rejected');
    return show(
      request,
      reply,
      status,
      'Something is wrong with the request',
      'The request could not be processed. Go back and try again.',
    );
  }
  request.log.error({ err }, 'request failed');
  return show(
    request,
    reply,
    500,
    'Something went wrong',
    `Something went wrong on our side. Please try again; if it keeps happening, tell your contact and quote reference ${request.id}.`,
  );
}
