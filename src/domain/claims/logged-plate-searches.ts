import { createGroupCommit } from '../group-commit';
import { lookupLogUnavailable } from '../registry/lookup-journal';
import type { LookupEntry } from '../registry/registry';
import type { Claim } from './claim';
import type { LoggedPlateSearch } from './claim-repository';

export type LoggedPlateSearchesOptions = {
  /** Runs the searches and commits their entries in one statement (ClaimRepository.searchByPlateLogged). */
  run: (searches: LoggedPlateSearch[]) => Promise<Claim[][]>;
  /** Batches run at once, each on a connection of its own. */
  lanes?: number;
  /** Searches per statement; a larger backlog runs as several statements, in order. */
  maxBatch?: number;
  maxBacklog?: number;
  /** The time, in milliseconds since the epoch. */
  now?: () => number;
  /** Told when a batch failed (its searches are answered 503, and nothing of them was written). */
  onError?: (err: unknown) => void;
  /**
   * Whether a batch's error is answered as it is (the database unreachable: the same 503 as any
   * request's) rather than as the look-up log's 503.
   */
  passThrough?: (err: unknown) => boolean;
};

/**
 * Plate searches by group commit: the searches that arrive while every lane is busy run together
 * as the next batch, with their look-up entries, in one statement, so one transaction. A search is
 * answered when that statement has committed: never without its entry, and with one round trip
 * and one commit shared by the whole batch (where a search and then its entry would take two of
 * each, and wait for both).
 */
export function createLoggedPlateSearches({
  run,
  lanes = 1,
  maxBatch = 500,
  maxBacklog,
  now = Date.now,
  onError,
  passThrough = () => false,
}: LoggedPlateSearchesOptions) {
  const searches = createGroupCommit<LoggedPlateSearch, Claim[]>({
    lanes,
    maxBatch,
    ...(maxBacklog !== undefined ? { maxBacklog } : {}),
    failed: (cause) => (cause instanceof Error && passThrough(cause) ? cause : lookupLogUnavailable()),
    ...(onError ? { onError } : {}),
    run,
  });
  return {
    /** The claims on the plate since `fromDate`, once the look-up `entry` (its claim ids filled in) is committed. */
    search(plate: string, fromDate: string, entry: Omit<LookupEntry, 'at'>): Promise<Claim[]> {
      const noted = entry as LookupEntry;
      noted.at = now();
      return searches.submit({ plate, fromDate, entry: noted });
    },
    flush: searches.flush,
  };
}
export type LoggedPlateSearches = ReturnType<typeof createLoggedPlateSearches>;
