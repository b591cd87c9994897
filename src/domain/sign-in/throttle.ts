import { createHash } from 'node:crypto';

/**
 * Failed sign-ins and failed second-factor codes are counted per email and per client address,
 * in fixed windows, where every server process sees the same counts: Redis when REDIS_URL is set,
 * the database otherwise. Past a budget, sign-in is refused until the window ends (before the
 * password is even checked).
 */
export const SIGN_IN_LIMITS = {
  /** Failures of one email (any address) per window. */
  perEmail: 10,
  /** Failures from one address (any email) per window. */
  perAddress: 30,
  windowMs: 15 * 60 * 1000,
} as const;

/** Where the counts live. */
export interface FailureCounter {
  add(keys: string[], windowStart: number, windowMs: number): Promise<number[]>;
  get(keys: string[], windowStart: number): Promise<number[]>;
}

const hashed = (kind: string, value: string) => `${kind}:${createHash('sha256').update(value, 'utf8').digest('hex').slice(0, 32)}`;

export function createSignInThrottle({ counter, now }: { counter: FailureCounter; now: () => number }) {
  const windowOf = (t: number) => t - (t % SIGN_IN_LIMITS.windowMs);
  const keysOf = (email: string, address: string) => [hashed('email', email.trim().toLowerCase()), hashed('addr', address)];
  return {
    /** Seconds until sign-in may be tried again for this email from this address, or 0 when it may now. */
    async blockedFor(email: string, address: string): Promise<number> {
      const t = now();
      const [byEmail = 0, byAddress = 0] = await counter.get(keysOf(email, address), windowOf(t));
      if (byEmail < SIGN_IN_LIMITS.perEmail && byAddress < SIGN_IN_LIMITS.perAddress) return 0;
      return Math.max(1, Math.ceil((windowOf(t) + SIGN_IN_LIMITS.windowMs - t) / 1000));
    },
    /** Counts a failed password or code. */
    async failed(email: string, address: string): Promise<void> {
      const t = now();
      await counter.add(keysOf(email, address), windowOf(t), SIGN_IN_LIMITS.windowMs);
    },
  };
}
export type SignInThrottle = ReturnType<typeof createSignInThrottle>;
