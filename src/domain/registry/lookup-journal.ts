import { AppError } from '../errors';
import { createGroupCommit } from '../group-commit';
import type { LookupEntry } from './registry';

/**
 * The look-up log, durable before a look-up is answered, written by group commit
 * (group-commit.ts). `record` resolves once the entry's batch is committed; the caller answers
 * only then, so no answer leaves without its record, whatever happens to the process afterwards.
 *
 * At most `writers` batches are written at a time. Entries that arrive while every writer is busy
 * wait together and go as the next batch: under load one statement writes many entries, and a
 * lone look-up waits for one short insert. There is no timer.
 *
 * A batch that cannot be written fails every look-up in it with a 503 (they are not answered, so
 * nothing went unrecorded); so does a look-up that arrives while `maxBacklog` entries wait.
 */

export type LookupJournalOptions = {
  /** Commits the entries (one statement); rejects if they were not written. */
  write: (entries: LookupEntry[]) => Promise<void>;
  /**
   * Batches written at once (each needs a connection of its own): a look-up that finds a writer
   * free is written at once, and waits for none of the batches in flight.
   */
  writers?: number;
  /** Entries per statement; a larger backlog is written as several statements, in order. */
  maxBatch?: number;
  maxBacklog?: number;
  /** The time, in milliseconds since the epoch. */
  now?: () => number;
  /** Told when a batch could not be written (its look-ups are answered 503). */
  onError?: (err: unknown) => void;
};

export const lookupLogUnavailable = () =>
  new AppError('UNAVAILABLE', 'The look-up log cannot be written right now, so no look-up is answered. Try again later.');

export function createLookupJournal({
  write,
  writers = 1,
  maxBatch = 2000,
  maxBacklog = 50_000,
  now = Date.now,
  onError,
}: LookupJournalOptions) {
  const log = createGroupCommit<LookupEntry, void>({
    lanes: writers,
    maxBatch,
    maxBacklog,
    failed: lookupLogUnavailable,
    ...(onError ? { onError } : {}),
    run: async (entries) => {
      await write(entries);
      return [];
    },
  });

  /**
   * Notes a look-up and resolves once it is committed; rejects with the 503 AppError when it
   * could not be. The journal takes the entry object over (stamping its time on it) rather than
   * copying it: this runs on every search.
   */
  function record(entry: Omit<LookupEntry, 'at'>): Promise<void> {
    const noted = entry as LookupEntry;
    noted.at = now();
    return log.submit(noted);
  }

  return { record, flush: log.flush, close: log.flush, waiting: log.waiting };
}
export type LookupJournal = ReturnType<typeof createLookupJournal>;
