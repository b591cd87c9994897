import type { Metrics } from './metrics';

type Log = { error(obj: object, msg: string): void };
export type DiskFullWhere = 'database' | 'storage';

/** How often a full disk is logged at most (each refused write is counted in the metric). */
const LOG_EVERY_MS = 60_000;
/** How long after the last refused write /readyz still reports the disk as full. */
const REPORTED_FOR_MS = 60_000;

/**
 * A full disk, as the operator learns of it: every write it refuses counts in
 * `claims_disk_full_total{where}`, one error line a minute at most names it (with how many were
 * refused since the last line), and /readyz reports it for a minute after the last refusal.
 */
export function createDiskFullReporter(metrics: Pick<Metrics, 'diskFull'>, log: Log, now: () => number = Date.now) {
  const logged = new Map<DiskFullWhere, number>();
  const unlogged = new Map<DiskFullWhere, number>();
  let last: { where: DiskFullWhere; at: number } | undefined;
  return {
    report(where: DiskFullWhere, err: unknown): void {
      metrics.diskFull(where);
      last = { where, at: now() };
      const previous = logged.get(where);
      if (previous !== undefined && now() - previous < LOG_EVERY_MS) {
        unlogged.set(where, (unlogged.get(where) ?? 0) + 1);
        return;
      }
      logged.set(where, now());
      const code = (err as { code?: unknown } | null)?.code;
      log.error(
        { where, code: typeof code === 'string' ? code : undefined, refusedSinceLastLine: unlogged.get(where) ?? 0 },
        where === 'database'
          ? 'disk full: the database cannot write (no space left on its disk); writes are refused until space is freed'
          : 'disk full: no space left for uploaded files; uploads are refused until space is freed',
      );
      unlogged.set(where, 0);
    },
    /** The last refusal, if it was within the last minute. */
    recent(): { where: DiskFullWhere; at: Date } | undefined {
      return last && now() - last.at < REPORTED_FOR_MS ? { where: last.where, at: new Date(last.at) } : undefined;
    },
  };
}
export type DiskFullReporter = ReturnType<typeof createDiskFullReporter>;
