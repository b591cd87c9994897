import type { FastifyReply, FastifyRequest } from 'fastify';

import type { SignedInUser } from '../domain/dashboard/dashboard-service';
import type { ReceivedFile } from '../domain/imports/import-service';
import type { Principal } from '../domain/principal';

declare module 'fastify' {
  interface Session {
    userId?: string;
    /** A received file waiting for "import it again?" (the same file was imported recently). */
    pendingImport?: ReceivedFile;
  }
  interface FastifyRequest {
    /** The signed-in person, loaded from the session on every dashboard request; null when signed out. */
    webUser: SignedInUser | null;
    /** Alerts the signed-in person's company received in the last 7 days (the navigation's count). */
    alertCount: number;
  }
}

export const SESSION_COOKIE = 'claims_session';
/** A sign-in lasts 8 hours from the moment it was made (not extended by activity). */
export const SESSION_MAX_AGE_MS = 8 * 60 * 60 * 1000;

export type CompanyUser = SignedInUser & { companyId: string; companyName: string };

/** A company person acts for their company, like a token does, and is recorded as the actor. */
export function principalOf(user: CompanyUser): Principal {
  return { companyId: user.companyId, companyName: user.companyName, tokenId: null, userId: user.id };
}

export function companyUser(request: FastifyRequest): CompanyUser {
  const user = request.webUser;
  if (!user || user.companyId === null || user.companyName === null) throw new Error('route guard missing: company person required');
  return user as CompanyUser;
}

/** Only same-site paths: `/claims?x=1`, never `//evil.example` or `https://…`. */
export function safeNext(raw: unknown): string {
  return typeof raw === 'string' && /^\/(?![/\\])[^\s]*$/u.test(raw) && raw.length <= 500 ? raw : '/';
}

/** Scripts (the upload and status polling) ask for JSON; browsers navigating ask for HTML or anything. */
export function wantsJson(request: FastifyRequest): boolean {
  const accept = request.headers.accept ?? '';
  return /application\/json/u.test(accept) && !/text\/html/u.test(accept);
}

/** Signed-out visitors are sent to the sign-in page (and back here afterwards); scripts get a 401. */
function toSignIn(request: FastifyRequest, reply: FastifyReply) {
  if (wantsJson(request)) return reply.status(401).send({ message: 'Sign in first.' });
  const next = request.method === 'GET' ? request.url : '/';
  return reply.redirect(next === '/' ? '/login' : `/login?next=${encodeURIComponent(next)}`, 303);
}

export class RoleError extends Error {
  constructor(
    readonly title: string,
    message: string,
  ) {
    super(message);
  }
}

/** preHandler: a person of a company (admin or member). The operator is sent to their own area. */
export async function requireCompanyUser(request: FastifyRequest, reply: FastifyReply) {
  const user = request.webUser;
  if (!user) return toSignIn(request, reply);
  if (user.companyId === null) {
    if (request.method === 'GET' && request.url === '/') return reply.redirect('/operator', 303);
    throw new RoleError('Company pages', 'This page belongs to a company. As the operator, use the Companies page.');
  }
}

/** preHandler: a company admin. */
export async function requireCompanyAdmin(request: FastifyRequest, reply: FastifyReply) {
  await requireCompanyUser(request, reply);
  if (reply.sent) return;
  if (request.webUser?.role !== 'admin') {
    throw new RoleError('Admins only', "Only an admin of your company can add or remove people. Ask one of your company's admins.");
  }
}

/** preHandler: the operator of the service. */
export async function requireOperator(request: FastifyRequest, reply: FastifyReply) {
  const user = request.webUser;
  if (!user) return toSignIn(request, reply);
  if (user.role !== 'operator') throw new RoleError('Operator only', 'This page is for the operator of the service.');
}
