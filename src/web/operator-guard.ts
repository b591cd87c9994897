import fastifyCookie from '@fastify/cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';

import type { AppDeps } from '../app';
import { decide } from '../domain/access/access';
import { SESSION_COOKIE, sessionCookieHeader, wantsJson } from './context';
import { sessionEnded } from './session-rules';

type GuardDeps = Pick<AppDeps, 'sessions' | 'dashboard' | 'sessionSecret' | 'now' | 'config'>;

/**
 * Who is signed in to the dashboard, for pages outside the dashboard's own plugin scope (Bull
 * Board): reads the session cookie, checks its signature with SESSION_SECRET (any listed one), and loads the
 * session and the person from the database, as the dashboard does on every request.
 */
/** The operator a request was let through for (by operatorSessionHook), for the audit trail. */
const operators = new WeakMap<FastifyRequest, { id: string; email: string }>();
export const operatorOf = (request: FastifyRequest): { id: string; email: string } | undefined => operators.get(request);

export function createOperatorSessionCheck(deps: GuardDeps) {
  // Every listed SESSION_SECRET verifies (a rotation), as the dashboard's session plugin does.
  const signer = fastifyCookie.signerFactory(deps.sessionSecret(), 'sha256');
  /** 'operator', 'company' (a signed-in company person), or null when nobody is signed in. */
  return async function signedIn(request: FastifyRequest): Promise<'operator' | 'company' | null> {
    const raw = request.headers.cookie;
    if (!raw) return null;
    const signed = fastifyCookie.parse(sessionCookieHeader(raw, request.protocol === 'https'))[SESSION_COOKIE];
    if (!signed) return null;
    const unsigned = signer.unsign(signed);
    if (!unsigned.valid || !unsigned.value) return null;
    const session = await deps.sessions.get(unsigned.value);
    const userId = session?.userId;
    if (typeof userId !== 'string') return null;
    // The dashboard's rules: idle or 8 hours old is signed out.
    const times = session as { signedInAt?: number; lastSeen?: number };
    if (sessionEnded(times, deps.now(), deps.config.sessionIdleMinutes * 60_000)) return null;
    const user = await deps.dashboard.currentUser(userId);
    if (!user) return null;
    // The route's need (Bull Board's: the operator), decided by access.ts as everywhere else.
    const refusal = decide(user.actor, request.routeOptions.config.access ?? 'operator');
    if (refusal) return refusal.reason === 'operator_only' || refusal.reason === 'role' ? 'company' : null;
    operators.set(request, { id: user.id, email: user.email });
    return 'operator';
  };
}

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** A browser request made by another site (defence in depth next to the SameSite=Lax cookie). */
function crossSite(request: FastifyRequest): boolean {
  if (request.headers['sec-fetch-site'] === 'cross-site') return true;
  const origin = request.headers.origin;
  if (!origin) return false;
  try {
    return new URL(origin).host !== request.host;
  } catch {
    return true;
  }
}

/**
 * onRequest hook for operator-only pages outside the dashboard: a signed-in operator passes;
 * a browser is sent to the sign-in page (and back afterwards), a company person to the dashboard
 * (which explains), anything else gets 401. State-changing requests from another site are refused.
 */
export function operatorSessionHook(deps: GuardDeps, returnTo: string) {
  const signedIn = createOperatorSessionCheck(deps);
  return async (request: FastifyRequest, reply: FastifyReply) => {
    // Answered here, not thrown: the guarded plugin may have an error handler of its own (Bull Board does).
    if (STATE_CHANGING.has(request.method) && crossSite(request))
      return reply.status(403).send({ message: 'This action is unauthorized.' });
    const who = await signedIn(request);
    if (who === 'operator') return;
    if (request.method !== 'GET' || wantsJson(request) || !/text\/html/u.test(request.headers.accept ?? '')) {
      return reply.status(401).send({ message: 'Unauthenticated.' });
    }
    // A company person signed in: the operator page tells them this is not for them.
    return reply.redirect(who === 'company' ? '/operator' : `/login?next=${encodeURIComponent(returnTo)}`, 303);
  };
}
