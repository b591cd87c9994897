import type { Logger } from 'pino';

import type { SearchRepository } from '../domain/registry/registry';
import { createClaimRepository } from './claim-repository';
import { isDatabaseUnavailable, pgErrorCode, type Db } from './db';
import { createRegistryRepository } from './registry-repository';

/** The cross-company reads, on one database (the primary's pool, or the replica's). */
export function createSearchRepository(db: Db): SearchRepository {
  const claims = createClaimRepository(db);
  const registry = createRegistryRepository(db);
  return {
    searchByPlate: (plate, fromDate) => claims.searchByPlate(plate, fromDate),
    matches: (claimId, companyId, fromDate, timeZone) => registry.matches(claimId, companyId, fromDate, timeZone),
    searchByPerson: (documents, dateOfBirth, fromDate) => registry.searchByPerson(documents, dateOfBirth, fromDate),
    incident: (claimId, companyId, fromDate) => registry.incident(claimId, companyId, fromDate),
    network: (claimId, companyId, fromDate, maxEdges) => registry.network(claimId, companyId, fromDate, maxEdges),
  };
}

/**
 * PostgreSQL's serialization_failure: on a hot standby, a statement cancelled because the WAL it
 * replays conflicts with it ("conflict with recovery"). The statement is fine on the primary.
 */
const RECOVERY_CONFLICT = '40001';

/** The code of a replica read given up after `replicaTimeoutMs`. */
export const REPLICA_TIMEOUT = 'SEARCH_REPLICA_TIMEOUT';

/** `work`, or a rejection with code REPLICA_TIMEOUT once `ms` have passed (the work itself goes on). */
function within<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error('the search replica did not answer in time'), { code: REPLICA_TIMEOUT })), ms);
  });
  // A read that fails after it was given up fails nobody.
  work.catch(() => {});
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

export type SearchRoutingOptions = {
  replica: SearchRepository;
  primary: SearchRepository;
  log: Pick<Logger, 'warn' | 'info'>;
  /** The replica's host:port for the log (never its URL: that may hold a password). */
  replicaName: string;
  /** While the replica is down, how long searches go straight to the primary before it is tried again. */
  retryAfterMs?: number;
  /**
   * A replica read still unanswered after this long goes to the primary, and counts as the replica
   * being down: a replica that went silent (a network dropping packets) leaves its connections
   * open, and the driver would wait for TCP to give up on them, minutes later. Searches take
   * milliseconds; the limit only has to be far above that.
   */
  replicaTimeoutMs?: number;
  now?: () => number;
};

/**
 * Searches on the replica, and on the primary when the replica cannot answer: while it is
 * unreachable (refused, cut, no connection within its connect timeout, no answer within
 * `replicaTimeoutMs`), for `retryAfterMs` at a time, so that searches do not each
 * wait for a connection that fails; then the next search tries it again. One warning when an episode
 * starts, one line when the replica answers again.
 *
 * A replica lags the primary by the time its WAL takes to arrive and be replayed. The matches of a
 * claim are asked by its company, often right after submitting it: a claim the replica does not
 * have (yet) is looked for on the primary before the answer is "not found".
 */
export function routeSearches({
  replica,
  primary,
  log,
  replicaName,
  retryAfterMs = 5000,
  replicaTimeoutMs = 5000,
  now = Date.now,
}: SearchRoutingOptions): SearchRepository {
  /** Set while the replica is down: when to try it again. */
  let retryAt: number | undefined;

  async function read<T>(fn: (r: SearchRepository) => Promise<T>): Promise<{ value: T; fromReplica: boolean }> {
    if (retryAt !== undefined && now() < retryAt) return { value: await fn(primary), fromReplica: false };
    let value: T;
    try {
      value = await within(fn(replica), replicaTimeoutMs);
    } catch (err) {
      if (pgErrorCode(err) === RECOVERY_CONFLICT) return { value: await fn(primary), fromReplica: false };
      if (!isDatabaseUnavailable(err) && pgErrorCode(err) !== REPLICA_TIMEOUT) throw err;
      if (retryAt === undefined) {
        log.warn(
          { replica: replicaName, code: pgErrorCode(err) },
          'search replica unavailable; searches go to the primary until it answers again',
        );
      }
      retryAt = now() + retryAfterMs;
      return { value: await fn(primary), fromReplica: false };
    }
    if (retryAt !== undefined) {
      retryAt = undefined;
      log.info({ replica: replicaName }, 'search replica answers again; searches go to it');
    }
    return { value, fromReplica: true };
  }

  return {
    searchByPlate: async (plate, fromDate) => (await read((r) => r.searchByPlate(plate, fromDate))).value,
    searchByPerson: async (documents, dateOfBirth, fromDate) =>
      (await read((r) => r.searchByPerson(documents, dateOfBirth, fromDate))).value,
    async matches(claimId, companyId, fromDate, timeZone) {
      const { value, fromReplica } = await read((r) => r.matches(claimId, companyId, fromDate, timeZone));
      if (value === undefined && fromReplica) return primary.matches(claimId, companyId, fromDate, timeZone);
      return value;
    },
    // Asked about a claim of the caller's, like matches: one the replica does not have yet is looked for on the primary.
    async incident(claimId, companyId, fromDate) {
      const { value, fromReplica } = await read((r) => r.incident(claimId, companyId, fromDate));
      if (value === undefined && fromReplica) return primary.incident(claimId, companyId, fromDate);
      return value;
    },
    async network(claimId, companyId, fromDate, maxEdges) {
      const { value, fromReplica } = await read((r) => r.network(claimId, companyId, fromDate, maxEdges));
      if (value === undefined && fromReplica) return primary.network(claimId, companyId, fromDate, maxEdges);
      return value;
    },
  };
}

/** host:port of a PostgreSQL URL, for logs (user and password left out). */
export function hostOf(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || '5432'}`;
  } catch {
    return 'the search replica';
  }
}
