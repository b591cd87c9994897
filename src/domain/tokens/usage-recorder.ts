/**
 * "Last used" of API tokens without a write per request: a use is noted in memory when the token
 * was not recorded by this process within the last `minGapMs` (a minute), and the noted uses are
 * written together, in one statement, after `flushMs`. `flush()` writes at once (before a list is
 * shown, and when the process stops).
 */
export type TokenUse = { tokenId: string; companyId: string; usedAt: Date };

export type UsageRecorderOptions = {
  write: (uses: TokenUse[]) => Promise<void>;
  flushMs: number;
  minGapMs: number;
  now?: () => number;
  /** Told when a batch could not be written (it is tried again with the next one). */
  onError?: (err: unknown) => void;
};

export function createUsageRecorder({ write, flushMs, minGapMs, now = Date.now, onError }: UsageRecorderOptions) {
  /** When this process last noted a use of each token (pruned after minGapMs). */
  const lastNoted = new Map<string, number>();
  const pending = new Map<string, { companyId: string; at: number }>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let writing: Promise<void> = Promise.resolve();

  function touch(tokenId: string, companyId: string): void {
    const at = now();
    const last = lastNoted.get(tokenId);
    if (last !== undefined && at - last < minGapMs) return;
    lastNoted.set(tokenId, at);
    pending.set(tokenId, { companyId, at });
    if (timer === undefined) {
      timer = setTimeout(() => void flush(), flushMs);
      timer.unref();
    }
  }

  function flush(): Promise<void> {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    const at = now();
    for (const [id, t] of lastNoted) if (at - t >= minGapMs) lastNoted.delete(id);
    if (pending.size === 0) return writing;
    const batch = [...pending].map(([tokenId, u]) => ({ tokenId, companyId: u.companyId, usedAt: new Date(u.at) }));
    pending.clear();
    // One write at a time, in order.
    writing = writing.then(() =>
      write(batch).catch((err: unknown) => {
        // Not lost: noted again, unless a later use of the same token is already waiting.
        for (const u of batch) {
          if (!pending.has(u.tokenId)) pending.set(u.tokenId, { companyId: u.companyId, at: u.usedAt.getTime() });
        }
        if (timer === undefined && pending.size > 0) {
          timer = setTimeout(() => void flush(), flushMs);
          timer.unref();
        }
        onError?.(err);
      }),
    );
    return writing;
  }

  return { touch, flush };
}
export type UsageRecorder = ReturnType<typeof createUsageRecorder>;
