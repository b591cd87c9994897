import type { RegistryService } from './registry-service';

type Log = { debug(msg: string): void; info(obj: object, msg: string): void; error(obj: object, msg: string): void };

/**
 * Runs the retention purge once a day. Every process that calls this checks every hour (and
 * shortly after start); the database decides which one runs: the first to ask in a 23-hour span.
 * Returns a stop function; the timers never keep a process alive.
 */
export function startRetentionSchedule(
  registry: Pick<RegistryService, 'purgeIfDue'>,
  log: Log,
  opts: { checkEveryMs?: number; firstCheckAfterMs?: number } = {},
): () => void {
  let running = false;
  let stopped = false;
  const check = async () => {
    if (running || stopped) return;
    running = true;
    try {
      const removed = await registry.purgeIfDue();
      if (removed) log.info({ removed }, 'retention purge done');
      else log.debug('retention purge not due: it ran within the last 23 hours (here or in another process)');
    } catch (err) {
      log.error({ err }, 'retention purge failed; the next daily run tries again (or run: npm run admin -- purge)');
    } finally {
      running = false;
    }
  };
  const first = setTimeout(() => void check(), opts.firstCheckAfterMs ?? 60_000);
  const every = setInterval(() => void check(), opts.checkEveryMs ?? 3_600_000);
  first.unref();
  every.unref();
  return () => {
    stopped = true;
    clearTimeout(first);
    clearInterval(every);
  };
}
