import type { FastifyInstance, FastifyRequest } from 'fastify';

import { createSealer, type Sealer } from '../domain/sign-in/sealed';

declare module 'fastify' {
  interface Session {
    /**
     * What the page after a create form shows once (a new token's value, a webhook's signing
     * secret, a first password, a reset link), by what it is of (`token:<id>`...): sealed, never in
     * a URL, and taken out of the session by the page that shows it.
     */
    oneTime?: Record<string, string>;
  }
  interface FastifyInstance {
    oneTimeSealer: Sealer;
  }
}

/** A session keeps at most this many values not shown yet (a form posted again and again without its page). */
const MAX_KEPT = 10;

/**
 * Registers the sealer of one-time values: AES-256-GCM under keys derived from SESSION_SECRET's
 * list (the first seals, every one opens), so a copy of the sessions table does not reveal a
 * token or a password that is waiting to be shown.
 */
export function registerOneTime(app: FastifyInstance, sessionSecrets: readonly string[]): void {
  app.decorate('oneTimeSealer', createSealer(sessionSecrets.map((s) => `one-time values shown after a form\0${s}`)));
}

/**
 * Post/redirect/get: the answer to a create form is a 303 to a page, and what only that answer
 * may show is kept here for it. Another value of the same key replaces the first.
 */
export function keepOnce(request: FastifyRequest, key: string, value: Record<string, string>): void {
  const kept = { ...(request.session.oneTime ?? {}) };
  delete kept[key];
  kept[key] = request.server.oneTimeSealer.seal(JSON.stringify(value));
  const keys = Object.keys(kept);
  for (const old of keys.slice(0, Math.max(0, keys.length - MAX_KEPT))) delete kept[old];
  request.session.oneTime = kept;
}

/**
 * The value kept for `key`, taken out of the session (a reload of the page finds nothing), or
 * undefined: never kept, shown already, or sealed with a key no longer in SESSION_SECRET.
 */
export function takeOnce(request: FastifyRequest, key: string): Record<string, string> | undefined {
  const kept = request.session.oneTime;
  const sealed = kept?.[key];
  if (!kept || sealed === undefined) return undefined;
  const rest = { ...kept };
  delete rest[key];
  if (Object.keys(rest).length === 0) delete request.session.oneTime;
  else request.session.oneTime = rest;
  try {
    return JSON.parse(request.server.oneTimeSealer.open(sealed)) as Record<string, string>;
  } catch {
    return undefined;
  }
}
