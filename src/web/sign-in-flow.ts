import type { FastifyReply, FastifyRequest } from 'fastify';

import type { UserRecord } from '../domain/companies/company-repository';
import { PENDING_SIGN_IN_MS } from './context';

export type SignInEvent =
  | { action: 'person.signed_in'; userId: string; email: string; method: 'password' | 'sso'; secondFactor: 'totp' | 'recovery' | 'none' }
  | { action: 'person.sign_in_failed'; userId: string | null; email: string; reason: string }
  | { action: 'person.mfa_enabled' | 'person.mfa_disabled' | 'person.password_changed'; userId: string; email: string; by?: { id: string; email: string } };

/**
 * Every sign-in, failure, second-factor change and password change is recorded. (The audit
 * trail's table is wired in audit-events.ts; until then the request log carries it, never a code
 * or a password.)
 */
export async function recordSignInEvent(request: FastifyRequest, event: SignInEvent): Promise<void> {
  request.log.info({ event: event.action, userId: event.userId }, event.action);
}

/** The half-done sign-in of this session, unless it is older than 10 minutes. */
export function pendingSignIn(request: FastifyRequest) {
  const pending = request.session?.pending;
  if (!pending) return undefined;
  if (request.server.deps.now() - pending.at > PENDING_SIGN_IN_MS) {
    delete request.session.pending;
    return undefined;
  }
  return pending;
}

const landing = (role: string, next: string) => (role === 'operator' && next === '/' ? '/operator' : next);

/** Signs the session in as the person (the last step of every way in). */
export function completeSignIn(request: FastifyRequest, user: { id: string; role: string }, next: string): string {
  const now = request.server.deps.now();
  const session = request.session;
  delete session.pending;
  delete session.ended;
  session.userId = user.id;
  session.signedInAt = now;
  session.lastSeen = now;
  return landing(user.role, next);
}

/**
 * After the password or the provider said yes: a fresh session id (an id planted before sign-in
 * is worth nothing afterwards), then the second factor: a code if the person has one, its set-up
 * if one is required (operators always), else signed in.
 */
export async function afterFirstFactor(
  request: FastifyRequest,
  reply: FastifyReply,
  user: UserRecord,
  next: string,
  method: 'password' | 'sso',
) {
  const { signIn } = request.server.deps;
  await request.session.regenerate();
  const [factor, required] = await Promise.all([
    signIn.secondFactor(user.id),
    signIn.secondFactorRequired({ role: user.role, companyId: user.company_id }),
  ]);
  const at = request.server.deps.now();
  if (factor.enabled) {
    request.session.pending = { userId: user.id, step: 'code', at, next, method };
    return reply.redirect('/login/code', 303);
  }
  if (required) {
    request.session.pending = { userId: user.id, step: 'enrol', at, next, method };
    return reply.redirect('/login/enrol', 303);
  }
  const target = completeSignIn(request, user, next);
  await recordSignInEvent(request, { action: 'person.signed_in', userId: user.id, email: user.email, method, secondFactor: 'none' });
  return reply.redirect(target, 303);
}
