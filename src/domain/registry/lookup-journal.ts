import { AppError } from '../errors';
import type { LookupEntry } from './registry';

/**
 * The look-up log, durable before a look-up is answered, written by group commit. `record`
 * resolves once the entry's batch is committed; the caller answers only then, so no answer
 * leaves without its record, whatever happens to the process afterwards.
 *
 * At most `writers` batches are written at a time. Entries that arrive while every writer is busy
 * wait together and go as the next batch, in one statement: under load one statement writes many
 * entries, and a lone look-up waits for one short insert. There is no timer.
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

type Batch = { entries: LookupEntry[]; done: Promise<void>; settle: (err?: unknown) => void };

function newBatch(): Batch {
  let settle!: (err?: unknown) => void;
  const done = new Promise<void>((resolve, reject) => {
    settle = (err) => (err === undefined ? resolve() : reject(lookupLogUnavailable()));
  });
  return { entries: [], done, settle };
}

export function createLookupJournal({
  write,
  writers = 1,
  maxBatch = 2000,
  maxBacklog = 50_000,
  now = Date.now,
  onError,
}: LookupJournalOptions) {
  /** The entries waiting for a writer. */
  let next: Batch | undefined;
  /** The batches being written. */
  const inFlight = new Set<Batch>();
  let working = 0;

  async function writeBatch(batch: Batch): Promise<void> {
    for (let from = 0; from < batch.entries.length; from += maxBatch) {
      await write(from === 0 && batch.entries.length <= maxBatch ? batch.entries : batch.entries.slice(from, from + maxBatch));
    }
  }

  /** One writer: takes whatever is waiting, writes it, and again, until nothing is waiting. */
  async function writer(): Promise<void> {
    working++;
    while (next !== undefined) {
      const batch = next;
      next = undefined;
      inFlight.add(batch);
      try {
        await writeBatch(batch);
        batch.settle();
      } catch (err) {
        onError?.(err);
        batch.settle(err ?? new Error('look-up log write failed'));
      } finally {
        inFlight.delete(batch);
      }
    }
    working--;
  }

  const waiting = () => {
    let n = next?.entries.length ?? 0;
    for (const b of inFlight) n += b.entries.length;
    return n;
  };

  /**
   * Notes a look-up and resolves once it is committed; rejects with the 503 AppError when it
   * could not be. The journal takes the entry object over (stamping its time on it) rather than
   * copying it: this runs on every search.
   */
  function record(entry: Omit<LookupEntry, 'at'>): Promise<void> {
    if (waiting() >= maxBacklog) return Promise.reject(lookupLogUnavailable());
    const noted = entry as LookupEntry;
    noted.at = now();
    next ??= newBatch();
    next.entries.push(noted);
    const { done } = next;
    if (working < writers) void writer();
    return done;
  }

  /** Resolves when everything noted so far has been written or has failed. */
  function flush(): Promise<void> {
    const pending = [...inFlight, ...(next ? [next] : [])].map((b) => b.done.catch(() => {}));
    return Promise.all(pending).then(() => {});
  }

  return { record, flush, close: flush, waiting };
}
export type LookupJournal = ReturnType<typeof createLookupJournal>;
