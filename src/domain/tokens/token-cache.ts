/**
 * Verified tokens, kept for a short time so that a request does not pay a database round trip to
 * check its token. Revocation stays honest:
 *
 * - the process that revokes a token calls `clear()` once the revocation is stored, so it refuses
 *   the token at once;
 * - other processes sharing the database learn of revocations from a counter the database keeps
 *   (the revocation version), read in the background every `pollMs`. When it moves, the whole
 *   cache is dropped. The cache is trusted only for `trustMs` after the start of the last read
 *   that confirmed the version: if a read is slow or fails, requests go to the database instead.
 *   A token revoked elsewhere is therefore refused here within `trustMs`, whatever the timers do.
 *
 * A look-up that started before a `clear()` never puts its (possibly stale) result into the cache.
 * Unknown tokens are not cached. Polling stops after `idleMs` without a request and starts again
 * with the next one (the cache is then emptied first, as nothing confirmed it meanwhile).
 */
export type RevocationWatch = {
  /** The database's revocation version: any change means some token was revoked. */
  version: () => Promise<string>;
  pollMs: number;
  trustMs: number;
  idleMs: number;
};

export type TokenCacheOptions = {
  /** How long a verified token is served from memory before it is looked up again. */
  ttlMs: number;
  maxEntries: number;
  /** Set when other processes share the database and may revoke tokens; absent: this process alone revokes. */
  revocations?: RevocationWatch | undefined;
  now?: () => number;
};

export function createTokenCache<V>({ ttlMs, maxEntries, revocations, now = Date.now }: TokenCacheOptions) {
  const entries = new Map<string, { value: V; expiresAt: number }>();
  const inflight = new Map<string, Promise<V | undefined>>();
  let generation = 0;

  // Revocation watch state.
  let version: string | undefined;
  let confirmedAt = Number.NEGATIVE_INFINITY;
  let lastUse = Number.NEGATIVE_INFINITY;
  let timer: ReturnType<typeof setInterval> | undefined;
  let polling = false;
  let closed = false;

  function clear(): void {
    entries.clear();
    inflight.clear();
    generation++;
  }

  function trusted(at: number): boolean {
    return !revocations || at - confirmedAt < revocations.trustMs;
  }

  async function poll(): Promise<void> {
    if (!revocations || polling) return;
    if (now() - lastUse > revocations.idleMs) {
      stopWatch();
      return;
    }
    polling = true;
    const sentAt = now();
    try {
      const v = await revocations.version();
      if (timer === undefined) return; // stopped meanwhile
      // Unknown before (first read, or after an idle stop): nothing confirmed what is cached.
      if (version === undefined || v !== version) clear();
      version = v;
      confirmedAt = sentAt;
    } catch {
      // Not confirmed: the cache stops being trusted after trustMs and requests go to the database.
    } finally {
      polling = false;
    }
  }

  function startWatch(): void {
    if (!revocations || timer !== undefined || closed) return;
    timer = setInterval(() => void poll(), revocations.pollMs);
    timer.unref();
    void poll();
  }

  function stopWatch(): void {
    if (timer !== undefined) clearInterval(timer);
    timer = undefined;
    version = undefined;
    confirmedAt = Number.NEGATIVE_INFINITY;
  }

  function remember(key: string, value: V, at: number): void {
    if (entries.size >= maxEntries) {
      // Map keeps insertion order: the first key is the oldest entry.
      const oldest = entries.keys().next();
      if (!oldest.done) entries.delete(oldest.value);
    }
    entries.set(key, { value, expiresAt: at + ttlMs });
  }

  /** The cached value for key, or load()'s result (cached when defined). Concurrent misses share one load. */
  async function get(key: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const at = now();
    lastUse = at;
    startWatch();
    if (trusted(at)) {
      const hit = entries.get(key);
      if (hit && hit.expiresAt > at) return hit.value;
    }
    const running = inflight.get(key);
    if (running) return running;
    const gen = generation;
    const loading = load().then(
      (value) => {
        if (inflight.get(key) === loading) inflight.delete(key);
        if (value !== undefined && gen === generation) remember(key, value, at);
        return value;
      },
      (err: unknown) => {
        if (inflight.get(key) === loading) inflight.delete(key);
        throw err;
      },
    );
    inflight.set(key, loading);
    return loading;
  }

  return {
    get,
    /** Forget everything (a token was revoked by this process). */
    clear,
    close(): void {
      closed = true;
      stopWatch();
      clear();
    },
    /** For tests and diagnostics. */
    get size() {
      return entries.size;
    },
  };
}
export type TokenCache<V> = ReturnType<typeof createTokenCache<V>>;
