import { SYSTEM_ACTOR, type AuditEventInput } from '../audit/audit';
import { AppError } from '../errors';
import { newId } from '../ids';
import type { IdentityOutcome } from './identity';

/**
 * Identity checks are disclosures. A mismatch (a document known with another date of birth, or
 * documents of two persons) tells the caller that a document exists: every one, from a
 * submission, an import row, a dry run or the dashboard, is an entry of the company's look-up log
 * (kind `identity_check`, result count 1, no claim, plate or client shown), written in the same
 * transaction (or group commit) as the request's other writes, so durable before it is answered.
 * A company is told at most IDENTITY_MISMATCHES_PER_HOUR mismatches an hour; past that, until the
 * hour has passed, every submission of the company is refused (429) and every import row fails
 * with the same message: refusing only the mismatching ones would go on telling which documents
 * exist.
 */

/** One mismatch told to a company: the look-up log entry it is. `clientIds`: the persons whose documents were matched (internal). */
export type IdentityCheck = {
  id: string;
  companyId: string;
  tokenId: string | null;
  userId: string | null;
  /** Milliseconds since the epoch. */
  at: number;
  clientIds: string[];
};

/** Where identity checks are written and counted (the look-up log); src/db implements it. */
export interface IdentityCheckLog {
  /** Each company's identity checks made at or after `since` (ms); companies with none are absent. */
  countSince(companyIds: string[], since: number): Promise<Map<string, number>>;
  append(checks: IdentityCheck[]): Promise<void>;
}

export type IdentityCheckPolicy = {
  /** IDENTITY_MISMATCHES_PER_HOUR; 0: no budget (every mismatch is still recorded). */
  perHour: number;
  /** The time, in milliseconds since the epoch. */
  now: () => number;
};

export const HOUR_MS = 3_600_000;

/** A row's outcome that told of a mismatch (not one refused for the budget). */
export const isMismatch = (o: IdentityOutcome): boolean => !o.ok && o.field !== 'row';

/**
 * Each company's identity checks of the last hour as this process last read them, read again once
 * a second old (or at once with `fresh`) and moved on by the checks this process writes. A
 * submission that tells of no mismatch is decided on these; one that does, on counts read then, so
 * a company's budget is exact where a mismatch is admitted, and a company that another process
 * took past its budget is refused here within a second.
 */
export function createCheckCounts(log: Pick<IdentityCheckLog, 'countSince'>, maxAgeMs = 1000) {
  const known = new Map<string, { n: number; readAt: number }>();
  return {
    async used(companyIds: readonly string[], at: number, opts: { fresh?: boolean } = {}): Promise<Map<string, number>> {
      const stale = companyIds.filter((c) => {
        const k = known.get(c);
        return opts.fresh || !k || at - k.readAt >= maxAgeMs || at < k.readAt;
      });
      if (stale.length > 0) {
        const read = await log.countSince(stale, at - HOUR_MS);
        for (const c of stale) known.set(c, { n: read.get(c) ?? 0, readAt: at });
      }
      return new Map(companyIds.map((c) => [c, known.get(c)?.n ?? 0]));
    },
    /** `n` more checks of the company, written by this process. */
    added(companyId: string, n: number): void {
      const k = known.get(companyId);
      if (k) k.n += n;
    },
  };
}

export const identityCheckMessages = {
  limited: 'This company has been told of too many identity mismatches in the last hour; claims are refused until the hour has passed.',
} as const;

export const identityChecksLimited = () =>
  new AppError('TOO_MANY_REQUESTS', identityCheckMessages.limited, undefined, 'identity_check_limited');

/** The outcome of a row refused because its company is past its budget (an import row's error). */
export const limitedOutcome: IdentityOutcome = { ok: false, field: 'row', message: identityCheckMessages.limited, clientIds: [] };

export type Who = { companyId: string; tokenId: string | null; userId: string | null };

export function identityCheckOf(who: Who, at: number, clientIds: string[]): IdentityCheck {
  return { id: newId(), companyId: who.companyId, tokenId: who.tokenId, userId: who.userId, at, clientIds };
}

/**
 * Walks the outcomes of rows in order against each company's budget (`used`: its checks of the
 * last hour so far, moved on here): the index of each row whose mismatch is within the budget
 * (recorded), for each company that went past it, the first row that did (from there on its
 * rows are refused), and the companies whose budget a row used up (`exhausted`: the audit event). `companyOf(i)` is row i's company. With `perHour` 0 every mismatch is
 * admitted.
 */
export function admitMismatches(
  outcomes: readonly IdentityOutcome[],
  companyOf: (i: number) => string,
  used: Map<string, number>,
  perHour: number,
): { admitted: number[]; limitedFrom: Map<string, number>; exhausted: string[] } {
  const admitted: number[] = [];
  const limitedFrom = new Map<string, number>();
  const exhausted: string[] = [];
  for (let i = 0; i < outcomes.length; i++) {
    const o = outcomes[i]!;
    if (!isMismatch(o)) continue;
    const company = companyOf(i);
    if (limitedFrom.has(company)) continue;
    const n = used.get(company) ?? 0;
    if (perHour > 0 && n >= perHour) {
      limitedFrom.set(company, i);
      continue;
    }
    used.set(company, n + 1);
    admitted.push(i);
    if (n + 1 === perHour) exhausted.push(company);
  }
  return { admitted, limitedFrom, exhausted };
}

/**
 * The audit event telling the operator that a company has used up its hour's identity checks
 * (written with the check that used it up; `admitMismatches`'s `exhausted`).
 */
export const identityChecksLimitedEvent = (companyId: string): AuditEventInput => ({
  companyId,
  action: 'company.identity_checks_limited',
  actor: SYSTEM_ACTOR,
  target: { type: 'company', id: companyId, name: null },
  ip: null,
  requestId: null,
});
