import type { FastifyReply, FastifyRequest } from 'fastify';

import { decide, ROLE_DOES, type Actor, type Refusal } from '../domain/access/access';
import type { SignedInUser } from '../domain/dashboard/dashboard-service';
import { RoleError, toSignIn } from './context';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A dashboard search: counted against the company's budget as the API's are (DECISIONS, "Limits everywhere"). */
    companyBudget?: boolean;
  }
}

/** The actor of a dashboard request: the signed-in person, or nobody. */
export const actorOfRequest = (user: SignedInUser | null): Actor => user?.actor ?? { type: 'anonymous' };

/** The dashboard's answer to a refusal of access.ts: the sign-in page, or a 403 page that says what is needed. */
export function refusePage(request: FastifyRequest, reply: FastifyReply, refusal: Refusal) {
  switch (refusal.reason) {
    case 'unauthenticated':
    case 'second_factor':
    case 'company_suspended':
      // (The last two are signed out before this: see checkAccess.)
      return toSignIn(request, reply);
    case 'role':
      throw new RoleError(
        `The ${refusal.needed} role is needed`,
        `This needs the ${refusal.needed} role (a ${refusal.needed} can ${ROLE_DOES[refusal.needed]}); you are a ${refusal.role}. Ask an admin of your company.`,
      );
    case 'operator_only':
      throw new RoleError('Operator only', 'This page is for the operator of the service.');
    case 'company_only':
    case 'insufficient_scope':
      if (request.method === 'GET' && request.url === '/') return reply.redirect('/operator', 303);
      throw new RoleError('Company pages', 'This page belongs to a company. As the operator, use the Companies page.');
  }
}

/**
 * preHandler of every dashboard page, after the session is read: the route's need (stated where
 * it is registered) decided by access.ts for the signed-in person.
 */
export async function checkAccess(request: FastifyRequest, reply: FastifyReply) {
  const need = request.routeOptions.config.access;
  // The app refuses to start with a route that states no need (http-access.ts): this is a guard.
  if (need === undefined) throw new RoleError('Not allowed', 'This page is not open to anyone yet.');
  const refusal = decide(actorOfRequest(request.webUser), need);
  if (!refusal) return;
  return refusePage(request, reply, refusal);
}

/**
 * The last preHandler of a dashboard search (`config.companyBudget`), after the route's own (its
 * CSRF check): counted against the company's budget as the API's searches are; 429 past it. A
 * post whose CSRF token is wrong is refused before it counts.
 */
export async function countCompanyBudget(request: FastifyRequest, reply: FastifyReply) {
  const companyId = request.webUser?.companyId;
  if (companyId) await request.server.rateLimits.countCompany(request, reply, companyId);
}
