import type { FastifyReply, FastifyRequest } from 'fastify';

import { auditOrigin } from '../audit-origin';
import { operatorActor, personActor, type AuditAction, type AuditActor, type AuditEventInput } from '../domain/audit/audit';
import { decide } from '../domain/access/access';
import type { UserRecord } from '../domain/companies/company-repository';
import { PENDING_SIGN_IN_MS } from './context';
import { renderPage } from './render';

/** A person as an audit event names them: id (null for an email nobody has), email, company (null: the operator's). */
export type EventPerson = { id: string | null; email: string; companyId: string | null };

const actorOf = (p: EventPerson): AuditActor =>
  p.id === null
    ? { type: 'person', id: null, name: p.email }
    : p.companyId === null
      ? operatorActor({ id: p.id, email: p.email })
      : personActor({ id: p.id, email: p.email });

/**
 * An audit event about a person: the company's (or the operator's), done by `by` (the signed-in
 * person acting) or else by the person themself. Never a password, a code or a key.
 */
export function personEvent(
  request: FastifyRequest,
  action: AuditAction,
  person: EventPerson,
  by?: EventPerson,
  data?: AuditEventInput['data'],
): AuditEventInput {
  return {
    companyId: person.companyId,
    action,
    actor: actorOf(by ?? person),
    target: { type: 'person', id: person.id, name: person.email },
    ...auditOrigin(request),
    ...(data ? { data } : {}),
  };
}

/** How a person signed in, as their `person.signed_in` event says (`data.method`). */
export type SignInMethod = 'password' | 'sso' | 'authenticator code' | 'recovery code';

/** The signed-in person (or operator) as the actor of an event. */
export const webActor = (request: FastifyRequest): AuditActor => actorOf(webPerson(request));

/** The signed-in person as an EventPerson. */
export const webPerson = (request: FastifyRequest): EventPerson => {
  const u = request.webUser!;
  return { id: u.id, email: u.email, companyId: u.companyId };
};
export const recordPerson = (u: { id: string; email: string; company_id: string | null }): EventPerson => ({
  id: u.id,
  email: u.email,
  companyId: u.company_id,
});

/**
 * A sign-in or a failed one is recorded (its own statement, committed before the answer). A
 * failure for an email names the person and their company when the email is someone's.
 */
export async function recordSignInEvent(
  request: FastifyRequest,
  action: 'person.signed_in' | 'person.sign_in_failed',
  person: EventPerson | { email: string },
  method?: SignInMethod,
): Promise<void> {
  const { deps } = request.server;
  const known: EventPerson =
    'id' in person ? person : ((await deps.signIn.personByEmail(person.email)) ?? { id: null, email: person.email, companyId: null });
  await deps.audit.record(personEvent(request, action, known, undefined, method ? { method } : undefined));
  request.log.info({ event: action, userId: known.id }, action);
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

/**
 * Signs the session in as the person (the last step of every way in), under a new session id
 * (DECISIONS: a new id at every step up): the id that held the half-done sign-in is worth nothing
 * afterwards. `rotated`: the caller gave the session a new id just now (after the first factor).
 */
export async function completeSignIn(
  request: FastifyRequest,
  user: { id: string; role: string },
  next: string,
  rotated = false,
): Promise<string> {
  if (!rotated) await request.session.regenerate();
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
  const { signIn, dashboard } = request.server.deps;
  // Whether this person may be signed in at all (access.ts): a suspended company's may not.
  const standing = await dashboard.currentUser(user.id);
  if (standing && decide(standing.actor, 'signed-in')?.reason === 'company_suspended') {
    request.log.info({ userId: user.id }, 'sign-in refused: company suspended');
    const suspended =
      "Your company's access to the registry is suspended by its operator, so nobody of your company can sign in. Its claims stay in the registry; ask the operator for the reason and to resume it.";
    return renderPage(reply, 'login', { step: 'email', email: user.email, next, error: suspended }, 403);
  }
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
  const target = await completeSignIn(request, user, next, true);
  await recordSignInEvent(request, 'person.signed_in', recordPerson(user), method);
  return reply.redirect(target, 303);
}
