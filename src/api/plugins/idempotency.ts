import type { FastifyInstance, FastifyReply, FastifyRequest, onSendAsyncHookHandler, preHandlerAsyncHookHandler } from 'fastify';

import {
  IDEMPOTENCY_HEADER,
  requestHash,
  type IdempotencyDecision,
  type StoredResponse,
} from '../../domain/idempotency/idempotency-service';

/** Requests that hold an Idempotency-Key whose first response is still to be stored. */
const pending = new WeakMap<FastifyRequest, { companyId: string; key: string }>();

function keyOf(request: FastifyRequest): string | undefined {
  const raw = request.headers[IDEMPOTENCY_HEADER.toLowerCase()];
  return Array.isArray(raw) ? raw.join(',') : raw;
}

const pathOf = (request: FastifyRequest) => request.url.split('?')[0] ?? request.url;

function replay(reply: FastifyReply, decision: Extract<IdempotencyDecision, { kind: 'replay' }>): FastifyReply {
  const { body, location } = decision.response;
  reply.code(decision.statusCode).header('idempotent-replayed', 'true');
  if (location) reply.header('location', location);
  return reply.send(body);
}

/**
 * Starts an Idempotency-Key request with the given request fingerprint. Returns true when the
 * reply was sent already (a replay of the first response); a key reused for another request is a
 * 422 and a first request still running a 409, both thrown. Without the header it does nothing.
 */
export async function beginIdempotent(app: FastifyInstance, request: FastifyRequest, reply: FastifyReply, hash: string): Promise<boolean> {
  const key = keyOf(request);
  if (key === undefined) return false;
  const companyId = request.principal.companyId;
  const decision = await app.deps.idempotency.begin(companyId, key, hash);
  if (decision.kind === 'replay') {
    replay(reply, decision);
    return true;
  }
  pending.set(request, { companyId, key });
  return false;
}

/** The fingerprint of an import: the path and the uploaded file's SHA-256. */
export const fileRequestHash = (request: FastifyRequest, sha256: string) =>
  requestHash(request.method, pathOf(request), { file_sha256: sha256 });

/**
 * Route hooks for Idempotency-Key on a JSON route (the fingerprint is method, path and body):
 * `app.post(url, { ...idempotentRoute(app), schema }, handler)`. The route must run after
 * authentication, as keys belong to a company. Routes that fingerprint otherwise (the import)
 * call `beginIdempotent` themselves and use only `onSend`.
 */
export function idempotentRoute(app: FastifyInstance): { preHandler: preHandlerAsyncHookHandler; onSend: onSendAsyncHookHandler } {
  const preHandler: preHandlerAsyncHookHandler = async function (request, reply) {
    if (keyOf(request) === undefined) return;
    const sent = await beginIdempotent(app, request, reply, requestHash(request.method, pathOf(request), request.body));
    if (sent) return reply;
  };
  return { preHandler, onSend: idempotencyOnSend(app) };
}

/** Stores the first response (status below 500) for replay; after a 5xx the key is freed for a retry. */
export function idempotencyOnSend(app: FastifyInstance): onSendAsyncHookHandler {
  return async function (request, reply, payload) {
    const held = pending.get(request);
    if (!held) return payload;
    pending.delete(request);
    try {
      if (reply.statusCode >= 500 || typeof payload !== 'string') {
        await app.deps.idempotency.release(held.companyId, held.key);
      } else {
        const location = reply.getHeader('location');
        const response: StoredResponse = { body: JSON.parse(payload), ...(typeof location === 'string' ? { location } : {}) };
        await app.deps.idempotency.complete(held.companyId, held.key, reply.statusCode, response);
      }
    } catch (err) {
      request.log.error({ err }, 'could not store the idempotent response');
    }
    return payload;
  };
}
