import { AppError } from '../errors';
import type { LookupEntry } from './registry';

/**
 * The look-up log, durable before a look-up is answered, written by group commit. `record`
 * resolves once the entry's batch is committed; the caller answers only then, so no answer
 * leaves without its record, whatever happens to the process afterwards.
 *
 * One batch is written at a time. Entries that arrive while a batch is being written wait
 * together and go as the next batch, in one statement: under load one statement writes many
 * entries, and a lone look-up waits for one short insert. There is no timer.
 *
 * A batch that cannot be written fails every look-up in it with a 503 (they are not answered, so
 * nothing went unrecorded); so does a look-up that arrives while `maxBacklog` entries wait.
 */

export type LookupJournalOptions = {
  /** Commits the entries (one statement); rejects if they were not written. */
  write: (entries: LookupEntry[]) => Promise<void>;
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

type Batch = { entries: LookupEntry[]; done: Promise<void>; settle: (err?: unknown) => void };

function newBatch(): Batch {
  let settle!: (err?: unknown) => void;
  const done = new Promise<void>((resolve, reject) => {
    settle = (err) => (err === undefined ? resolve() : reject(lookupLogUnavailable()));
  });
  return { entries: [], done, settle };
}

export function createLookupJournal({ write, maxBatch = 2000, maxBacklog = 50_000, now = Date.now, onError }: LookupJournalOptions) {
  /** The entries waiting for the batch in flight to finish. */
  let next: Batch | undefined;
  /** The batch being written, if any. */
  let current: Batch | undefined;

  async function writeBatch(batch: Batch): Promise<void> {
    for (let from = 0; from < batch.entries.length; from += maxBatch) {
      await write(from === 0 && batch.entries.length <= maxBatch ? batch.entries : batch.entries.slice(from, from + maxBatch));
    }
  }

  /** Writes batch after batch until nothing is waiting. */
  async function drain(): Promise<void> {
    while (next !== undefined) {
      current = next;
      next = undefined;
      try {
        await writeBatch(current);
        current.settle();
      } catch (err) {
        onError?.(err);
        current.settle(err ?? new Error('look-up log write failed'));
      }
    }
    current = undefined;
  }

  /**
   * Notes a look-up and resolves once it is committed; rejects with the 503 AppError when it
   * could not be. The journal takes the entry object over (stamping its time on it) rather than
   * copying it: this runs on every search.
   */
  function record(entry: Omit<LookupEntry, 'at'>): Promise<void> {
    if ((next?.entries.length ?? 0) + (current?.entries.length ?? 0) >= maxBacklog) {
      return Promise.reject(lookupLogUnavailable());
    }
    const noted = entry as LookupEntry;
    noted.at = now();
    next ??= newBatch();
    next.entries.push(noted);
    const { done } = next;
    if (current === undefined) void drain();
    return done;
  }

  /** Resolves when everything noted so far has been written or has failed. */
  function flush(): Promise<void> {
    const last = next ?? current;
    return last ? last.done.catch(() => {}) : Promise.resolve();
  }

  return { record, flush, close: flush, waiting: () => (next?.entries.length ?? 0) + (current?.entries.length ?? 0) };
}
export type LookupJournal = ReturnType<typeof createLookupJournal>;
