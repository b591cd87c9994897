import type { FailureCounter } from '../domain/sign-in/throttle';
import type { SignInRepository } from '../domain/sign-in/sign-in-repository';

const PURGE_EVERY_MS = 10 * 60 * 1000;

/** Failed sign-ins counted in the database (no REDIS_URL): one row per key and window; old windows purged now and then. */
export function createDatabaseFailureCounter(repo: SignInRepository, now: () => number): FailureCounter {
  let lastPurge = 0;
  return {
    async add(keys, windowStart, windowMs) {
      const counts = await repo.addFailures(keys, windowStart);
      if (now() - lastPurge > PURGE_EVERY_MS) {
        lastPurge = now();
        await repo.deleteFailuresBefore(windowStart - windowMs);
      }
      return counts;
    },
    get: (keys, windowStart) => repo.failures(keys, windowStart),
  };
}
