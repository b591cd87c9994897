import type { Claim, ClaimStatus } from '../claims/claim';
import type { PageRequest, Position } from '../paging';
import type { MatchedOn } from '../registry/registry';

export const ALERT_KINDS = ['match', 'status_changed'] as const;
export type AlertKind = (typeof ALERT_KINDS)[number];

/** Days back that a company's look-ups (and alerts) of a claim earn it the claim's status changes. */
export const STATUS_ALERT_DAYS = 90;

/** At most this many alerts in one `alerts.created` webhook delivery. */
export const ALERTS_PER_EVENT = 100;

/**
 * An alert as GET /alerts lists it and the `alerts.created` event carries it. `matched_claim` is
 * the other company's claim as a plate search shows it (no more).
 */
export type MatchAlert = {
  id: string;
  kind: 'match';
  /** The told company's own claim. */
  claim_id: string;
  matched_claim: Claim;
  matched_on: MatchedOn[];
  /** The two claims are of one incident (claim dates at most INCIDENT_DAYS apart). */
  same_incident: boolean;
  created_at: string;
};
export type StatusAlert = {
  id: string;
  kind: 'status_changed';
  claim_id: null;
  matched_claim: Claim;
  from: ClaimStatus;
  to: ClaimStatus;
  created_at: string;
};
export type Alert = MatchAlert | StatusAlert;

/**
 * The writes of alerts, each one statement inside the caller's transaction: the alerts, their
 * look-up log entries (kind `alert`, in the told company's log) and their webhook deliveries
 * (`alerts.created`, at most ALERTS_PER_EVENT a delivery, one event per told company), so that an
 * alert exists exactly when its claim or status change has committed, and is never announced twice.
 * Each returns the number of alerts made.
 */
export interface AlertWriter {
  /**
   * Match alerts for claims just stored (`claimIds`): every visible claim of another company with
   * the same plate or client and a claim date on or after `fromDate` gets one for its company.
   * One per pair of claims: a pair already alerted is skipped.
   */
  matchClaims(claimIds: string[], fromDate: string): Promise<number>;
  /** The same for every claim of a completed import, set-based (one statement for the import). */
  matchImport(importId: string, fromDate: string): Promise<number>;
  /**
   * A claim's status changed from `from` to `to`: one alert for each other company whose look-ups
   * (alerts included) returned the claim in the last `days` days.
   */
  statusChanged(claimId: string, from: ClaimStatus, to: ClaimStatus, days: number): Promise<number>;
}

export interface AlertRepository extends AlertWriter {
  /** The company's alerts newest first; with `claimId`, those of that (own) claim only. */
  list(companyId: string, opts: { claimId: string | undefined } & PageRequest): Promise<(Alert & { position: Position })[]>;
  /** How many alerts the company received since `since` (an RFC 3339 time). */
  countSince(companyId: string, since: string): Promise<number>;
}
