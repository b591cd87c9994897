import { AppError } from '../errors';
import type { LookupEntry } from './registry';

/**
 * The look-up log without a write on the look-up's own path. A look-up notes its entry here (in
 * memory, at the moment of the read) and answers; the noted entries are written together, in
 * one statement, every `flushMs` or as soon as `maxBatch` are waiting. That keeps a search a
 * read-only statement: the log then costs a search about a tenth of its throughput (README,
 * Performance) instead of a committed write per request.
 *
 * What that trades: entries noted in the last `flushMs` before a process is killed (SIGKILL, a
 * power cut) are not written; a clean stop writes them (`close`). Reads of the log in this process
 * (`GET /lookups`, the claim's look-ups, the subject export, the purge) write what is waiting
 * first, so a company always sees its own look-ups; another process shows them within `flushMs`.
 * A batch that cannot be written is kept and tried again; if `maxBacklog` entries are waiting, new
 * look-ups are refused (503) rather than answered without a record.
 */

export type LookupJournalOptions = {
  write: (entries: LookupEntry[]) => Promise<void>;
  flushMs: number;
  maxBatch?: number;
  maxBacklog?: number;
  /** The time, in milliseconds since the epoch. */
  now?: () => number;
  /** Told when a batch could not be written (it is kept and tried again). */
  onError?: (err: unknown) => void;
};

export const lookupLogUnavailable = () =>
  new AppError('UNAVAILABLE', 'The look-up log cannot be written right now, so no look-up is answered. Try again later.');

export function createLookupJournal({
  write,
  flushMs,
  maxBatch = 2000,
  maxBacklog = 50_000,
  now = Date.now,
  onError,
}: LookupJournalOptions) {
  let pending: LookupEntry[] = [];
  /** Entries of batches that failed, in the order they were noted; written before `pending`. */
  let failed: LookupEntry[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  /** The write in flight (one at a time, in order). */
  let writing: Promise<void> = Promise.resolve();
  let inFlight = 0;

  const schedule = (ms: number) => {
    if (timer !== undefined) return;
    timer = setTimeout(() => void flush(), ms);
    timer.unref();
  };

  /**
   * Notes a look-up; throws the 503 AppError when too many entries could not be written. The
   * journal takes the entry object over (stamping its time on it) rather than copying it: this
   * runs on every search.
   */
  function record(entry: Omit<LookupEntry, 'at'>): void {
    if (failed.length + pending.length + inFlight >= maxBacklog) throw lookupLogUnavailable();
    const noted = entry as LookupEntry;
    noted.at = now();
    pending.push(noted);
    if (pending.length >= maxBatch) void flush();
    else schedule(flushMs);
  }

  /** Writes everything noted so far; resolves when it is written or has failed (and is kept). */
  function flush(): Promise<void> {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (pending.length === 0 && failed.length === 0) return writing;
    const batch = failed.concat(pending);
    failed = [];
    pending = [];
    inFlight += batch.length;
    writing = writing.then(async () => {
      let done = 0;
      try {
        for (; done < batch.length; done += maxBatch) await write(batch.slice(done, done + maxBatch));
      } catch (err) {
        // Kept, in order, ahead of what was noted meanwhile; tried again after flushMs.
        failed = failed.concat(batch.slice(done));
        schedule(Math.max(flushMs, 100));
        onError?.(err);
      } finally {
        inFlight -= batch.length;
      }
    });
    return writing;
  }

  return { record, flush, close: flush, waiting: () => failed.length + pending.length + inFlight };
}
export type LookupJournal = ReturnType<typeof createLookupJournal>;
