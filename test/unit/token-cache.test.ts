import { afterEach, describe, expect, it } from 'vitest';

import { createTokenCache } from '../../src/domain/tokens/token-cache';
import { createUsageRecorder, type TokenUse } from '../../src/domain/tokens/usage-recorder';

/** A clock the test moves by hand; timers are not relied on (polling is driven through the version reads). */
function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

/** A revocation version the test controls, and a way to wait until the cache has read it. */
function versionSource() {
  let value = '0';
  let reads = 0;
  return {
    version: async () => {
      reads++;
      return value;
    },
    bump: () => void (value = String(Number(value) + 1)),
    get reads() {
      return reads;
    },
  };
}

const settle = () => new Promise((r) => setTimeout(r, 0));

describe('token cache', () => {
  const caches: { close(): void }[] = [];
  afterEach(() => caches.splice(0).forEach((c) => c.close()));

  it('serves a verified token from memory, and looks it up again after the time to live', async () => {
    const c = clock();
    const cache = createTokenCache<string>({ ttlMs: 10_000, maxEntries: 10, now: c.now });
    caches.push(cache);
    let loads = 0;
    const load = async () => (loads++, 'principal');
    expect(await cache.get('h', load)).toBe('principal');
    expect(await cache.get('h', load)).toBe('principal');
    expect(loads).toBe(1);
    c.advance(10_001);
    await cache.get('h', load);
    expect(loads).toBe(2);
  });

  it('does not cache unknown tokens, and lets concurrent misses share one look-up', async () => {
    const cache = createTokenCache<string>({ ttlMs: 10_000, maxEntries: 10 });
    caches.push(cache);
    let loads = 0;
    expect(await cache.get('unknown', async () => (loads++, undefined))).toBeUndefined();
    expect(await cache.get('unknown', async () => (loads++, undefined))).toBeUndefined();
    expect(loads).toBe(2);
    const results = await Promise.all([1, 2, 3].map(() => cache.get('k', async () => (loads++, 'p'))));
    expect(results).toEqual(['p', 'p', 'p']);
    expect(loads).toBe(3);
  });

  it('refuses at once after clear(), and never keeps the answer of a look-up that started before it', async () => {
    const cache = createTokenCache<string>({ ttlMs: 10_000, maxEntries: 10 });
    caches.push(cache);
    let live = true;
    let release!: () => void;
    const slow = new Promise<void>((r) => (release = r));
    // A look-up that read the token as live, then the token is revoked here before it returns.
    const before = cache.get('h', async () => {
      await slow;
      return 'stale';
    });
    live = false;
    cache.clear();
    release();
    expect(await before).toBe('stale');
    expect(await cache.get('h', async () => (live ? 'p' : undefined))).toBeUndefined();
  });

  it('with other processes sharing the database: serves from memory only after a version read confirmed it', async () => {
    const c = clock();
    const v = versionSource();
    const cache = createTokenCache<string>({
      ttlMs: 60_000,
      maxEntries: 10,
      now: c.now,
      revocations: { version: v.version, pollMs: 60_000, trustMs: 800, idleMs: 60_000 },
    });
    caches.push(cache);
    let live = true;
    let loads = 0;
    const load = async () => (loads++, live ? 'p' : undefined);
    expect(await cache.get('h', load)).toBe('p'); // starts the watch; the first read empties the cache
    await settle();
    expect(v.reads).toBe(1);
    expect(await cache.get('h', load)).toBe('p');
    expect(await cache.get('h', load)).toBe('p');
    expect(loads).toBe(2); // the second get filled the cache after the confirmation; the third was a hit

    // Another process revokes: the database's answer changes and the version moves.
    live = false;
    v.bump();
    // Until the next read, the entry may still be served, but only within trustMs of the last confirmation.
    c.advance(801);
    expect(await cache.get('h', load)).toBeUndefined();
  });

  it('drops everything when the version moves', async () => {
    const c = clock();
    const v = versionSource();
    let tick!: () => void;
    const cache = createTokenCache<string>({
      ttlMs: 60_000,
      maxEntries: 10,
      now: c.now,
      revocations: {
        version: async () => {
          tick?.();
          return v.version();
        },
        pollMs: 5,
        trustMs: 60_000,
        idleMs: 60_000,
      },
    });
    caches.push(cache);
    let live = true;
    const load = async () => (live ? 'p' : undefined);
    await cache.get('h', load);
    await settle();
    await cache.get('h', load);
    expect(cache.size).toBe(1);
    live = false;
    v.bump();
    const reads = v.reads;
    await new Promise<void>((r) => (tick = () => v.reads > reads && r()));
    await settle();
    expect(cache.size).toBe(0);
    expect(await cache.get('h', load)).toBeUndefined();
  });

  it('goes to the database while the version cannot be read', async () => {
    const c = clock();
    let failing = false;
    const cache = createTokenCache<string>({
      ttlMs: 60_000,
      maxEntries: 10,
      now: c.now,
      revocations: {
        version: async () => {
          if (failing) throw new Error('database down');
          return '0';
        },
        pollMs: 60_000,
        trustMs: 800,
        idleMs: 60_000,
      },
    });
    caches.push(cache);
    let loads = 0;
    const load = async () => (loads++, 'p');
    await cache.get('h', load);
    await settle();
    await cache.get('h', load);
    failing = true;
    c.advance(801);
    await cache.get('h', load);
    await cache.get('h', load);
    expect(loads).toBe(4);
  });

  it('keeps at most maxEntries, forgetting the oldest', async () => {
    const cache = createTokenCache<string>({ ttlMs: 60_000, maxEntries: 2 });
    caches.push(cache);
    for (const k of ['a', 'b', 'c']) await cache.get(k, async () => k);
    expect(cache.size).toBe(2);
    let loads = 0;
    await cache.get('a', async () => (loads++, 'a'));
    expect(loads).toBe(1);
  });
});

describe('last use of tokens', () => {
  it('is written in batches, once a minute at most per token, not once per request', async () => {
    const c = clock();
    const writes: TokenUse[][] = [];
    const usage = createUsageRecorder({ write: async (u) => void writes.push(u), flushMs: 60_000, minGapMs: 60_000, now: c.now });
    for (let i = 0; i < 100; i++) usage.touch('t1', 'c1');
    usage.touch('t2', 'c1');
    await usage.flush();
    expect(writes).toHaveLength(1);
    expect(writes[0]!.map((u) => u.tokenId).sort()).toEqual(['t1', 't2']);
    c.advance(30_000);
    usage.touch('t1', 'c1');
    await usage.flush();
    expect(writes).toHaveLength(1);
    c.advance(30_000);
    usage.touch('t1', 'c1');
    await usage.flush();
    expect(writes).toHaveLength(2);
    expect(writes[1]).toEqual([{ tokenId: 't1', companyId: 'c1', usedAt: new Date(c.now()) }]);
  });

  it('keeps a batch that could not be written for the next one', async () => {
    let fail = true;
    const writes: TokenUse[][] = [];
    const errors: unknown[] = [];
    const usage = createUsageRecorder({
      write: async (u) => {
        if (fail) throw new Error('database down');
        writes.push(u);
      },
      flushMs: 60_000,
      minGapMs: 60_000,
      onError: (e) => errors.push(e),
    });
    usage.touch('t1', 'c1');
    await usage.flush();
    expect(errors).toHaveLength(1);
    fail = false;
    await usage.flush();
    expect(writes.map((b) => b.map((u) => u.tokenId))).toEqual([['t1']]);
  });
});
