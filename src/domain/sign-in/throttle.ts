import { createHash } from 'node:crypto';

/**
 * Password, second-factor, recovery-code and current-password attempts are counted before they are
 * checked (NIST SP 800-63B 5.2.2): one atomic step adds the attempt to every budget it belongs to,
 * or to none when one is spent, so attempts sent in parallel cannot pass a budget. The counts live
 * where every server process sees them: Redis when REDIS_URL is set, the database otherwise. A
 * successful attempt gives its count back; a failed one stays counted until its window ends.
 */
export const SIGN_IN_LIMITS = {
  /** Attempts at one account from one client address. */
  perAccountAndAddress: { max: 10, windowMs: 15 * 60 * 1000 },
  /** Attempts at one account from all addresses together. */
  perAccount: { max: 100, windowMs: 60 * 60 * 1000 },
  /** Attempts from one address at any accounts (one address trying many accounts). */
  perAddress: { max: 30, windowMs: 15 * 60 * 1000 },
} as const;

/** One budget an attempt counts against: its counter's key, its fixed window, its limit. */
export type Slot = { key: string; windowStart: number; windowMs: number; max: number };

/** Where the counts live. */
export interface FailureCounter {
  /**
   * Adds one to every slot, atomically and only when every count stays within its `max`; else adds
   * nothing. The counts after (taken) or as found (refused).
   */
  take(slots: Slot[]): Promise<{ taken: boolean; counts: number[] }>;
  /** Takes one back from every slot (never below 0). */
  giveBack(slots: Slot[]): Promise<void>;
  /** The counts, unchanged. */
  get(slots: Slot[]): Promise<number[]>;
}

/** An attempt counted (check it now; `succeeded` gives the count back), or refused for `retryAfterSeconds`. */
export type Attempt = { allowed: true; succeeded(): Promise<void> } | { allowed: false; retryAfterSeconds: number };

const hashed = (kind: string, value: string) => `${kind}:${createHash('sha256').update(value, 'utf8').digest('hex').slice(0, 32)}`;

export function createSignInThrottle({ counter, now }: { counter: FailureCounter; now: () => number }) {
  const slotsOf = (account: string, address: string, t: number): Slot[] => {
    const email = account.trim().toLowerCase();
    const slot = (key: string, { max, windowMs }: { max: number; windowMs: number }): Slot => ({
      key,
      windowStart: t - (t % windowMs),
      windowMs,
      max,
    });
    return [
      slot(hashed('pair', `${email}\n${address}`), SIGN_IN_LIMITS.perAccountAndAddress),
      slot(hashed('email', email), SIGN_IN_LIMITS.perAccount),
      slot(hashed('addr', address), SIGN_IN_LIMITS.perAddress),
    ];
  };
  /** Seconds until every full slot's window has passed. */
  const waitOf = (slots: Slot[], counts: number[], t: number) =>
    Math.max(1, ...slots.map((s, i) => ((counts[i] ?? 0) >= s.max ? Math.ceil((s.windowStart + s.windowMs - t) / 1000) : 0)));
  return {
    /** Seconds until an attempt at this account from this address may be made, or 0 when it may now (counts nothing). */
    async blockedFor(account: string, address: string): Promise<number> {
      const t = now();
      const slots = slotsOf(account, address, t);
      const counts = await counter.get(slots);
      return slots.some((s, i) => (counts[i] ?? 0) >= s.max) ? waitOf(slots, counts, t) : 0;
    },
    /**
     * Counts an attempt at this account from this address before it is checked. Refused when a
     * budget is spent (nothing counted). Allowed, the attempt counts as failed unless `succeeded`.
     */
    async attempt(account: string, address: string): Promise<Attempt> {
      const t = now();
      const slots = slotsOf(account, address, t);
      const { taken, counts } = await counter.take(slots);
      if (!taken) return { allowed: false, retryAfterSeconds: waitOf(slots, counts, t) };
      let given = false;
      return {
        allowed: true,
        async succeeded() {
          if (given) return;
          given = true;
          await counter.giveBack(slots);
        },
      };
    },
    /** Counts a failure that was not an attempt checked here (an SSO sign-in the provider refused), within the budgets. */
    async failed(account: string, address: string): Promise<void> {
      await counter.take(slotsOf(account, address, now()));
    },
  };
}
export type SignInThrottle = ReturnType<typeof createSignInThrottle>;
