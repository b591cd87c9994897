import type { FastifyRequest } from 'fastify';

import type { CompanyRole } from '../domain/companies/company-repository';
import { RoleError } from './context';

/**
 * The one table of who may open each dashboard page or send each form (DECISIONS, "Roles"), by
 * method and route pattern as Fastify registers it: `public` (anyone), a company role (that role
 * or a higher one: viewer < member < admin), or `operator`. A preHandler of the dashboard checks
 * every request against it; test/web/role-matrix.test.ts drives each role against each entry,
 * and fails for a dashboard route without one. A route missing here is refused to everyone.
 */
export type PageAccess = 'public' | CompanyRole | 'operator';

export const PAGE_ROLES: Readonly<Record<string, PageAccess>> = {
  'GET /login': 'public',
  'POST /login': 'public',
  'POST /logout': 'public',
  'GET /*': 'public',
  // The steps of a sign-in: each checks the half-finished sign-in its session holds.
  'GET /login/code': 'public',
  'POST /login/code': 'public',
  'GET /login/enrol': 'public',
  'POST /login/enrol': 'public',
  'GET /login/sso/callback': 'public',
  'GET /reset/:token': 'public',
  'POST /reset/:token': 'public',

  // A viewer reads: claims, claim pages, searches, look-ups, alerts, quality, who has access.
  'GET /': 'viewer',
  'GET /claims': 'viewer',
  'GET /claims/export.csv': 'viewer',
  'GET /claims/:id': 'viewer',
  'GET /search': 'viewer',
  'POST /search': 'viewer',
  'POST /search/person': 'viewer',
  'GET /lookups': 'viewer',
  'GET /alerts': 'viewer',
  'GET /quality': 'viewer',
  'GET /imports': 'viewer',
  'GET /imports/:id': 'viewer',
  'GET /imports/:id/status': 'viewer',
  'GET /imports/:id/failed-rows.csv': 'viewer',
  'GET /lookups/batch/:id': 'viewer',
  'GET /lookups/batch/:id/results.csv': 'viewer',
  'GET /settings': 'viewer',
  'GET /settings/people': 'viewer',
  // One's own sign-in: everyone (the operator too).
  'GET /settings/security': 'viewer',
  'POST /settings/security/password': 'viewer',
  'POST /settings/security/second-factor': 'viewer',
  'POST /settings/security/second-factor/confirm': 'viewer',
  'POST /settings/security/second-factor/disable': 'viewer',

  // A member also enters claims, changes statuses, uploads imports and batch look-ups.
  'GET /claims/new': 'member',
  'POST /claims': 'member',
  'POST /claims/:id/status': 'member',
  'POST /imports': 'member',
  'GET /imports/confirm': 'member',
  'POST /imports/confirm': 'member',
  'POST /imports/:id/cancel': 'member',
  'GET /lookups/batch': 'member',
  'POST /lookups/batch': 'member',

  // Only an admin manages people, API tokens, webhooks, and reads the audit log.
  'POST /settings/people': 'admin',
  'GET /settings/people/:id/remove': 'admin',
  'POST /settings/people/:id/remove': 'admin',
  'POST /settings/people/:id/role': 'admin',
  'GET /settings/tokens': 'admin',
  'POST /settings/tokens': 'admin',
  'GET /settings/tokens/:id/revoke': 'admin',
  'POST /settings/tokens/:id/revoke': 'admin',
  'GET /settings/webhooks': 'admin',
  'POST /settings/webhooks': 'admin',
  'POST /settings/webhooks/:id/test': 'admin',
  'GET /settings/webhooks/:id/delete': 'admin',
  'POST /settings/webhooks/:id/delete': 'admin',
  'POST /settings/people/:id/reset': 'admin',
  'GET /settings/sign-in': 'admin',
  'POST /settings/sign-in/second-factor': 'admin',
  'POST /settings/sign-in/sso': 'admin',
  'POST /settings/sign-in/sso/remove': 'admin',
  'GET /settings/audit': 'admin',
  'GET /settings/audit/export.csv': 'admin',

  // The operator of the service.
  'GET /operator': 'operator',
  'POST /operator/companies': 'operator',
  'GET /operator/companies/:id': 'operator',
  'POST /operator/companies/:id/people': 'operator',
  'GET /operator/companies/:id/people/:personId/remove': 'operator',
  'POST /operator/companies/:id/people/:personId/remove': 'operator',
  'POST /operator/companies/:id/suspend': 'operator',
  'POST /operator/companies/:id/resume': 'operator',
  'GET /operator/companies/:id/sign-in': 'operator',
  'POST /operator/companies/:id/sign-in/second-factor': 'operator',
  'POST /operator/companies/:id/sign-in/sso': 'operator',
  'POST /operator/companies/:id/sign-in/sso/remove': 'operator',
  'POST /operator/companies/:id/sso-domains/approve': 'operator',
  'POST /operator/companies/:id/sso-domains/remove': 'operator',
  'GET /operator/audit': 'operator',
  'GET /operator/quality': 'operator',
};

export const pageKey = (method: string, url: string): string => `${method === 'HEAD' ? 'GET' : method} ${url}`;

const RANK: Record<CompanyRole, number> = { viewer: 0, member: 1, admin: 2 };
const NAMES: Record<CompanyRole, string> = { viewer: 'viewer', member: 'member', admin: 'admin' };

/** What a role may do, for the 403 page. */
const WHAT: Record<CompanyRole, string> = {
  viewer: 'read claims, searches, look-ups, alerts and quality',
  member: 'also enter claims, change statuses, upload imports and batch look-ups',
  admin: 'also manage people, API tokens, webhooks and read the audit log',
};

/**
 * preHandler of every dashboard page: a signed-in company person whose role is below the page's
 * gets a 403 page naming the role it needs. Signed-out visitors and the operator are left to the
 * page's own guard (sign-in redirect, the operator's area).
 */
export async function checkPageRole(request: FastifyRequest): Promise<void> {
  const needed = PAGE_ROLES[pageKey(request.method, request.routeOptions.url ?? '')];
  if (needed === undefined) {
    request.log.error({ route: request.routeOptions.url }, 'dashboard route has no entry in src/web/page-roles.ts; refused');
    throw new RoleError('Not allowed', 'This page is not open to anyone yet.');
  }
  const user = request.webUser;
  if (needed === 'public' || needed === 'operator' || !user || user.companyId === null) return;
  const role = user.role as CompanyRole;
  if ((RANK[role] ?? -1) < RANK[needed]) {
    throw new RoleError(
      `The ${NAMES[needed]} role is needed`,
      `This needs the ${NAMES[needed]} role (a ${NAMES[needed]} can ${WHAT[needed]}); you are a ${role}. Ask an admin of your company.`,
    );
  }
}
