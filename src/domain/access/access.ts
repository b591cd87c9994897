import { operatorActor, personActor, CLI_ACTOR, SYSTEM_ACTOR, tokenActor, type AuditActor } from '../audit/audit';
import type { CompanyRole } from '../companies/company-repository';
import { grants, type TokenScope } from '../tokens/scopes';

/**
 * Who may do what, decided in one place (DECISIONS, "One decision"). Every route of every surface
 * (the API, the dashboard, Bull Board) states its `Need` where it is registered; the surface turns
 * its caller into an `Actor` and asks `decide`. The rules that hold everywhere live here and
 * nowhere else: a suspended company is refused, operators need a second factor (and a company
 * that requires one, its people), the role ranks, a token's scopes.
 */

/**
 * What a route needs:
 * - `public`: anyone, signed in or not (the sign-in steps, assets, health).
 * - `signed-in`: a person of a company or the operator (one's own sign-in settings).
 * - a company role: a person of a company with that role or a higher one (viewer < member < admin).
 * - `operator`: the operator of the service.
 * - `{ scope }`: an API token with that scope (`claims:write` implies `claims:read`).
 */
export type Need = 'public' | 'signed-in' | CompanyRole | 'operator' | { readonly scope: TokenScope };

/** Who is acting. The command line and the service's own work act as the operator does. */
export type Actor =
  | { readonly type: 'anonymous' }
  | {
      readonly type: 'token';
      readonly id: string;
      readonly name: string;
      readonly companyId: string;
      readonly scopes: readonly string[];
      readonly companySuspended: boolean;
    }
  | {
      readonly type: 'person';
      readonly id: string;
      readonly email: string;
      readonly companyId: string;
      readonly role: CompanyRole;
      readonly secondFactor: boolean;
      /** The company requires a second factor of all its people. */
      readonly companyRequiresSecondFactor: boolean;
      readonly companySuspended: boolean;
    }
  | { readonly type: 'operator'; readonly id: string; readonly email: string; readonly secondFactor: boolean }
  | { readonly type: 'command-line' }
  | { readonly type: 'system' };

/** Why an actor is refused a need; null when it is granted. */
export type Refusal =
  | { readonly reason: 'unauthenticated' }
  | { readonly reason: 'company_suspended' }
  /** A second factor is needed and the person has none: they set one up before anything else. */
  | { readonly reason: 'second_factor' }
  | { readonly reason: 'insufficient_scope'; readonly scope: TokenScope }
  | { readonly reason: 'role'; readonly needed: CompanyRole; readonly role: CompanyRole }
  | { readonly reason: 'operator_only' }
  /** A company's page asked by the operator (or a dashboard page by a token). */
  | { readonly reason: 'company_only' };

const RANK: Readonly<Record<CompanyRole, number>> = { viewer: 0, member: 1, admin: 2 };

/** Whether `role` is `needed` or a higher one. */
export const roleAtLeast = (role: CompanyRole, needed: CompanyRole): boolean => RANK[role] >= RANK[needed];

export const isScopeNeed = (need: Need): need is Extract<Need, object> => typeof need === 'object';
const isRole = (need: Need): need is CompanyRole => typeof need === 'string' && need in RANK;

/** Whether a person must have a second factor: the operator always, a company's people when the company requires it. */
export function secondFactorNeeded(who: { type: 'operator' } | { type: 'person'; companyRequiresSecondFactor: boolean }): boolean {
  return who.type === 'operator' || who.companyRequiresSecondFactor;
}

/** The one decision: null when `actor` may do what `need` asks, else why not. */
export function decide(actor: Actor, need: Need): Refusal | null {
  if (need === 'public') return null;
  switch (actor.type) {
    case 'anonymous':
      return { reason: 'unauthenticated' };
    case 'command-line':
    case 'system':
      // Whoever runs the command line runs the service: an operator's needs, never a token's.
      return isScopeNeed(need) || need === 'signed-in' || isRole(need) ? { reason: 'company_only' } : null;
    case 'token':
      if (actor.companySuspended) return { reason: 'company_suspended' };
      if (!isScopeNeed(need)) return { reason: 'company_only' };
      return grants(actor.scopes, need.scope) ? null : { reason: 'insufficient_scope', scope: need.scope };
    case 'operator':
      if (!actor.secondFactor && secondFactorNeeded(actor)) return { reason: 'second_factor' };
      if (need === 'operator' || need === 'signed-in') return null;
      return { reason: 'company_only' };
    case 'person':
      if (actor.companySuspended) return { reason: 'company_suspended' };
      if (!actor.secondFactor && secondFactorNeeded(actor)) return { reason: 'second_factor' };
      if (need === 'signed-in') return null;
      if (need === 'operator') return { reason: 'operator_only' };
      if (!isRole(need)) return { reason: 'company_only' };
      return roleAtLeast(actor.role, need) ? null : { reason: 'role', needed: need, role: actor.role };
  }
}

/** How a need reads in a table or a message: `public`, `admin`, `scope:claims:read`... */
export const needLabel = (need: Need): string => (isScopeNeed(need) ? `scope:${need.scope}` : need);

/** What each role may do, for the page that refuses one. */
export const ROLE_DOES: Readonly<Record<CompanyRole, string>> = {
  viewer: 'read claims, searches, look-ups, alerts and quality',
  member: 'also enter claims, change statuses, upload imports and batch look-ups',
  admin: 'also manage people, API tokens, webhooks and read the audit log',
};

/** The actor as an audit event names it (ids and names only: never a secret). */
export function auditActorOf(actor: Actor): AuditActor {
  switch (actor.type) {
    case 'token':
      return tokenActor(actor);
    case 'person':
      return personActor(actor);
    case 'operator':
      return operatorActor(actor);
    case 'command-line':
      return CLI_ACTOR;
    case 'system':
      return SYSTEM_ACTOR;
    case 'anonymous':
      return { type: 'person', id: null, name: 'anonymous' };
  }
}
