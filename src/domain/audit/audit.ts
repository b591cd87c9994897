import type { Position } from '../paging';
import type { ChainAnchor, ChainEvent, ChainHead } from './audit-chain';

/**
 * The audit trail: every administrative act, recorded in the same transaction as the act, so an
 * act is never answered before its record is durable and never recorded without having happened.
 * One append-only table (src/db/audit-repository.ts). Searches are not audit events: they are the
 * look-up log's.
 *
 * No event ever holds a token value, a password, a second-factor secret or a document number:
 * actors and targets are named by ids and names only (a token by its name, a person by email).
 */

/** Every action the trail records (DECISIONS, "Audit trail"), and the operator's Bull Board acts. */
export const AUDIT_ACTIONS = [
  'token.created',
  'token.revoked',
  'webhook.created',
  'webhook.deleted',
  'webhook.secret_rotated',
  // Key rotation (DECISIONS, Keys rotate without downtime): admin reseal.
  'keys.resealed',
  'person.created',
  'person.removed',
  'person.role_changed',
  'person.signed_in',
  'person.sign_in_failed',
  'person.password_changed',
  'person.mfa_enabled',
  'person.mfa_disabled',
  'company.created',
  'company.suspended',
  'company.resumed',
  'company.settings_changed',
  // An admin asked for an email domain for single sign-on; the operator approved or removed one (target: the domain).
  'company.sso_domain_requested',
  'company.sso_domain_approved',
  'company.sso_domain_removed',
  'company.identity_checks_limited',
  'import.cancelled',
  'data.purged',
  'subject.exported',
  // The embedded database copied (admin backup) or brought back (admin restore).
  'database.backed_up',
  'database.restored',
  // A download of personal data (its `data.what`: claims CSV, audit CSV, failed rows, batch results, subject export).
  'data.exported',
  // The operator's acts in Bull Board (src/web/bull-board.ts).
  'queue.job_retried',
  'queue.job_removed',
  'queue.job_promoted',
  'queue.job_added',
  'queue.job_updated',
  'queue.jobs_retried',
  'queue.jobs_promoted',
  'queue.cleaned',
  'queue.emptied',
  'queue.paused',
  'queue.resumed',
  // Any other change made in Bull Board (concurrency, rate limit, job schedulers).
  'queue.changed',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export const isAuditAction = (value: string): value is AuditAction => (AUDIT_ACTIONS as readonly string[]).includes(value);

/** Who acted. A person by id and email, a token by id and name, the operator, or the service itself. */
export type AuditActor = { type: 'person' | 'token' | 'operator' | 'system'; id: string | null; name: string };

/** What the act was done to (a token, a webhook, a person, a company, an import, a queue job...). */
export type AuditTarget = { type: string; id: string | null; name: string | null };

/** One event to record. `ip` and `requestId` are null for the command line and the service's own jobs. */
export type AuditEventInput = {
  /** The company whose event it is; null for an act of the operator that concerns no company. */
  companyId: string | null;
  action: AuditAction;
  actor: AuditActor;
  target: AuditTarget | null;
  ip: string | null;
  requestId: string | null;
  /**
   * What the event says besides its actor and target (a sign-in's method, what was exported).
   * Kept with the event and in its hash; not part of the API's answer. Never a secret.
   */
  data?: Record<string, string | number | boolean | null>;
};

/** An event as the API, the dashboard and the exports show it. */
export type AuditEvent = {
  id: string;
  company_id: string | null;
  action: AuditAction;
  actor: AuditActor;
  target: AuditTarget | null;
  ip: string | null;
  request_id: string | null;
  created_at: string;
  /** What the event says besides (AuditEventInput's `data`); null when nothing. Not in the API's answer. */
  data: Record<string, unknown> | null;
};

/** The actor of every act of the admin command line (DECISIONS): no ip, no request id. */
export const CLI_ACTOR: AuditActor = Object.freeze({ type: 'operator', id: null, name: 'command line' });

/** The actor of the service's own scheduled work (the daily retention purge). */
export const SYSTEM_ACTOR: AuditActor = Object.freeze({ type: 'system', id: null, name: 'claims registry' });

/** The actor of a signed-in person of a company (id and email). */
export const personActor = (user: { id: string; email: string }): AuditActor => ({ type: 'person', id: user.id, name: user.email });

/** The actor of the operator signed in to the dashboard or Bull Board. */
export const operatorActor = (user: { id: string; email: string }): AuditActor => ({ type: 'operator', id: user.id, name: user.email });

/** The actor of an API token (id and the name it was given; never its value). */
export const tokenActor = (token: { id: string; name: string }): AuditActor => ({ type: 'token', id: token.id, name: token.name });

/**
 * The actor of an act done as a principal: its token (by name), or a signed-in person (by id;
 * callers that know the person's email pass `personActor` instead).
 */
export function actorOf(principal: { tokenId: string | null; tokenName?: string; userId: string | null }): AuditActor {
  if (principal.tokenId !== null) return { type: 'token', id: principal.tokenId, name: principal.tokenName ?? 'API token' };
  return { type: 'person', id: principal.userId, name: principal.userId ?? 'unknown person' };
}

/** Where a request came from, for the event's `ip` and `request_id`. */
export type AuditOrigin = { ip: string | null; requestId: string | null };
export const NO_ORIGIN: AuditOrigin = Object.freeze({ ip: null, requestId: null });

/** A keyset position in the newest-first list: the event's created_at (microseconds, UTC) and id (src/domain/paging.ts). */
export type AuditPosition = Position;

/** What the audit trail needs from storage (src/db/audit-repository.ts implements it). */
export interface AuditRepository {
  /**
   * Records one event, or several in one statement: one INSERT on the connection this repository was made with. Inside
   * `repos.transaction(async (tx) => ...)` that is the act's own transaction (`tx.audit.record`),
   * so the act and its event commit together or not at all.
   */
  record(event: AuditEventInput | readonly AuditEventInput[]): Promise<void>;
  /**
   * Events newest first after `after`, at most `limit`: one company's (companyId a uuid) or every
   * company's and the operator's (companyId null, the operator's view), optionally one action.
   */
  list(opts: {
    companyId: string | null;
    action?: AuditAction | undefined;
    after?: AuditPosition | undefined;
    /** Only events at or after this instant (ISO 8601); for the exports. */
    since?: string | undefined;
    limit: number;
  }): Promise<(AuditEvent & { position: AuditPosition })[]>;
  /**
   * Deletes the events created before `before` (ISO 8601), at most `limit`, oldest first, through
   * the database's one purge function, which records itself (`data.purged` by `actor`, with each
   * chain's anchor) when it removed any; the count deleted.
   */
  purgeBefore(before: string, limit: number, actor: AuditActor): Promise<number>;
  /** Every chain's head (one company's with companyId; null: the operator's chain). */
  chainHeads(companyId?: string | null): Promise<ChainHead[]>;
  /** One chain's events after `afterSeq`, in order, at most `limit`. */
  chainEvents(chain: string, afterSeq: string, limit: number): Promise<ChainEvent[]>;
  /** The anchors the newest audit purge recorded (chain → the newest event it had removed); {} before any. */
  purgeAnchors(): Promise<Record<string, ChainAnchor>>;
}

/**
 * Records `event` with the act's own transaction handle: `record(tx, event)` is
 * `tx.audit.record(event)`. One statement in the act's transaction, nothing more.
 */
export function recordAudit(tx: { audit: Pick<AuditRepository, 'record'> }, event: AuditEventInput): Promise<void> {
  return tx.audit.record(event);
}
