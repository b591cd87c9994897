import type { FailureCounter, Slot } from '../domain/sign-in/throttle';
import type { Db } from './db';

const PURGE_EVERY_MS = 10 * 60 * 1000;

/** Thrown inside the transaction to roll a refused attempt back, with the counts as found. */
class Refused extends Error {
  constructor(readonly counts: number[]) {
    super('sign-in budget spent');
  }
}

/** Keys in one order everywhere (takers and givers lock rows in it: no deadlock between them). */
const ordered = (slots: Slot[]) => [...slots].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
const countsOf = (slots: Slot[], rows: { key: string; failures: number }[]) => {
  const byKey = new Map(rows.map((r) => [r.key, Number(r.failures)]));
  return slots.map((s) => byKey.get(s.key) ?? 0);
};

/**
 * Sign-in attempts counted in the database (no REDIS_URL): one row per key and window. An attempt
 * is one transaction: every slot's row is incremented (and so locked until the end), and when a
 * count passes its limit the transaction is rolled back, so parallel attempts queue on the rows
 * and never pass a budget. Old windows are purged now and then.
 */
export function createDatabaseFailureCounter(db: Db, now: () => number): FailureCounter {
  let lastPurge = 0;
  const purge = async () => {
    if (now() - lastPurge <= PURGE_EVERY_MS) return;
    lastPurge = now();
    const longest = 2 * 60 * 60 * 1000;
    await db.query('DELETE FROM sign_in_failures WHERE window_start < $1', [now() - longest]);
  };
  return {
    async take(slots) {
      const sorted = ordered(slots);
      try {
        const counts = await db.transaction(async (tx) => {
          const rows = await tx.query<{ key: string; failures: number }>(
            `INSERT INTO sign_in_failures (key, window_start, failures)
             SELECT k, w, 1 FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS t(k, w, i) ORDER BY i
             ON CONFLICT (key, window_start) DO UPDATE SET failures = sign_in_failures.failures + 1
             RETURNING key, failures`,
            [sorted.map((s) => s.key), sorted.map((s) => s.windowStart)],
          );
          const after = countsOf(slots, rows);
          if (after.some((c, i) => c > slots[i]!.max)) throw new Refused(after.map((c) => c - 1));
          return after;
        });
        await purge();
        return { taken: true, counts };
      } catch (err) {
        if (err instanceof Refused) return { taken: false, counts: err.counts };
        throw err;
      }
    },
    async giveBack(slots) {
      const sorted = ordered(slots);
      await db.query(
        `UPDATE sign_in_failures f SET failures = f.failures - 1
           FROM (SELECT s.key, s.window_start FROM sign_in_failures s
                   JOIN unnest($1::text[], $2::bigint[]) AS t(k, w) ON s.key = t.k AND s.window_start = t.w
                  ORDER BY s.key FOR UPDATE OF s) l
          WHERE f.key = l.key AND f.window_start = l.window_start AND f.failures > 0`,
        [sorted.map((s) => s.key), sorted.map((s) => s.windowStart)],
      );
    },
    async get(slots) {
      const rows = await db.query<{ key: string; failures: number }>(
        `SELECT s.key, s.failures FROM sign_in_failures s
           JOIN unnest($1::text[], $2::bigint[]) AS t(k, w) ON s.key = t.k AND s.window_start = t.w`,
        [slots.map((s) => s.key), slots.map((s) => s.windowStart)],
      );
      return countsOf(slots, rows);
    },
  };
}
