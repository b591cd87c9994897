import type { ImportRecord } from './ports';

/**
 * An import's pace, for a person planning around it: rows a second and when it should finish.
 *
 * - Shown once a tenth of the file's rows is done (PACE_AFTER_SHARE): before that the figure
 *   would mostly measure the start (the file opened, the first chunks' look-ups), so both are null.
 * - While processing: the rows done so far over the time since processing first began (the first
 *   `processing` of the history, so an attempt that resumed after a crash counts the time lost),
 *   up to `now`, the service's clock; the finish is `now` plus the rows left at that pace.
 * - Completed: the final average, all the file's rows over processing's first start to the
 *   completion; the estimate is null (`finished_at` says when it finished).
 * - Queued, failed or cancelled: both null.
 *
 * The history's times are the database's clock; `now` is the service's (both UTC, kept in step by
 * the hosts' time synchronisation).
 */
export const PACE_AFTER_SHARE = 0.1;

export type ImportPace = {
  /** Rows a second, to one decimal; null as above. */
  rowsPerSecond: number | null;
  /** Milliseconds since the epoch; null as above. */
  estimatedFinishAt: number | null;
};

const NONE: ImportPace = { rowsPerSecond: null, estimatedFinishAt: null };

const timeOf = (run: Pick<ImportRecord, 'history'>, status: 'processing' | 'completed', which: 'first' | 'last') => {
  const entries = run.history.filter((h) => h.status === status);
  const entry = which === 'first' ? entries[0] : entries.at(-1);
  const ms = entry ? Date.parse(entry.at) : Number.NaN;
  return Number.isNaN(ms) ? undefined : ms;
};

const rounded = (rowsPerSecond: number) => Math.round(rowsPerSecond * 10) / 10;

export function importPace(run: Pick<ImportRecord, 'status' | 'rowsDone' | 'rowsTotal' | 'history'>, now: number): ImportPace {
  if (run.status !== 'processing' && run.status !== 'completed') return NONE;
  const started = timeOf(run, 'processing', 'first');
  if (started === undefined || run.rowsTotal <= 0) return NONE;
  if (run.status === 'completed') {
    const finished = timeOf(run, 'completed', 'last');
    if (finished === undefined || finished <= started) return NONE;
    return { rowsPerSecond: rounded((run.rowsTotal * 1000) / (finished - started)), estimatedFinishAt: null };
  }
  const elapsed = now - started;
  if (run.rowsDone < run.rowsTotal * PACE_AFTER_SHARE || run.rowsDone <= 0 || elapsed <= 0) return NONE;
  const perMs = run.rowsDone / elapsed;
  const left = Math.max(0, run.rowsTotal - run.rowsDone);
  return { rowsPerSecond: rounded(perMs * 1000), estimatedFinishAt: Math.round(now + left / perMs) };
}
