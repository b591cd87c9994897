import { Redis } from 'ioredis';

import type { FailureCounter } from '../domain/sign-in/throttle';

/**
 * Failed sign-ins counted in Redis (REDIS_URL), shared by every server process: one counter per
 * key and window, which Redis drops after two windows.
 */
export function createRedisFailureCounter(url: string, prefix: string): FailureCounter & { close(): Promise<void> } {
  const redis = new Redis(url, { maxRetriesPerRequest: 2, enableOfflineQueue: true });
  const name = (key: string, windowStart: number) => `${prefix}:sign-in-failures:${key}:${windowStart}`;
  return {
    async add(keys, windowStart, windowMs) {
      const multi = redis.multi();
      for (const key of keys) multi.incr(name(key, windowStart)).pexpire(name(key, windowStart), windowMs * 2);
      const results = (await multi.exec()) ?? [];
      return keys.map((_k, i) => Number(results[i * 2]?.[1] ?? 0));
    },
    async get(keys, windowStart) {
      const values = await redis.mget(keys.map((k) => name(k, windowStart)));
      return values.map((v) => Number(v ?? 0));
    },
    async close() {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
