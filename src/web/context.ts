import type { FastifyReply, FastifyRequest } from 'fastify';

import type { SignedInUser } from '../domain/dashboard/dashboard-service';
import type { ReceivedFile } from '../domain/imports/import-service';
import type { Principal } from '../domain/principal';

declare module 'fastify' {
  interface Session {
    userId?: string;
    /** When the person signed in (the 8-hour limit) and last made a request (the idle limit), ms since 1970. */
    signedInAt?: number;
    lastSeen?: number;
    /** Why the last sign-in ended by itself ('idle' or 'expired'): the sign-in page says so once. */
    ended?: 'idle' | 'expired';
    /** A sign-in half done: the password (or SSO) was right, a code or an enrolment is still due. */
    pending?: { userId: string; step: 'code' | 'enrol'; at: number; next: string; method: 'password' | 'sso' };
    /** An SSO sign-in under way at the company's provider: what its answer must match. */
    sso?: { companyId: string; state: string; nonce: string; verifier: string; at: number; next: string };
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

/**
 * The session cookie: `__Host-claims_session` over TLS (Secure, Path=/, no Domain: no other host
 * or subdomain can plant or read it); `claims_session` over plain HTTP (development, tests), where
 * browsers refuse a `__Host-` cookie. Inside the server it always has the first name.
 */
export const SESSION_COOKIE = '__Host-claims_session';
export const PLAIN_SESSION_COOKIE = 'claims_session';
/** A sign-in lasts 8 hours from the moment it was made, however active. */
export const SESSION_MAX_AGE_MS = 8 * 60 * 60 * 1000;
/** A half-done sign-in (a code or an enrolment due) must be finished within this time. */
export const PENDING_SIGN_IN_MS = 10 * 60 * 1000;

/**
 * The Cookie header as the session plugin should read it: over TLS only the `__Host-` cookie
 * counts; over plain HTTP the plain one, under the `__Host-` name.
 */
export function sessionCookieHeader(header: string, tls: boolean): string {
  const pairs = header.split(';').map((p) => p.trim());
  const out: string[] = [];
  for (const pair of pairs) {
    const name = pair.slice(0, pair.indexOf('=')).trim();
    if (name === SESSION_COOKIE) {
      if (tls) out.push(pair);
    } else if (name === PLAIN_SESSION_COOKIE) {
      if (!tls) out.push(`${SESSION_COOKIE}=${pair.slice(pair.indexOf('=') + 1)}`);
    } else if (pair) out.push(pair);
  }
  return out.join('; ');
}

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

/**
 * A navigation that came from another site: the browser says so (`Sec-Fetch-Site: cross-site` or
 * `same-site`, a subdomain being another site of ours to trust no more), or the `Referer` is of
 * another origin. Without either header (an older browser, a script), it is not.
 */
export function fromAnotherSite(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  if (site === 'cross-site' || site === 'same-site') return true;
  const referer = request.headers.referer;
  if (!referer) return false;
  try {
    return new URL(referer).host !== request.host;
  } catch {
    return true;
  }
}

/** Scripts (the upload and status polling) ask for JSON; browsers navigating ask for HTML or anything. */
export function wantsJson(request: FastifyRequest): boolean {
  const accept = request.headers.accept ?? '';
  return /application\/json/u.test(accept) && !/text\/html/u.test(accept);
}

/** Signed-out visitors are sent to the sign-in page (and back here afterwards); scripts get a 401. */
export function toSignIn(request: FastifyRequest, reply: FastifyReply) {
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
