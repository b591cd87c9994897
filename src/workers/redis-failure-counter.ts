import { Redis } from 'ioredis';

import type { FailureCounter, Slot } from '../domain/sign-in/throttle';

/**
 * Adds one to every counter when each stays within its limit, else nothing, in one Redis call (a
 * script runs alone): KEYS the counters, ARGV each one's limit and time to live (ms), in turn.
 * Returns 1 or 0 (taken), then the counts.
 */
const TAKE_LUA = `
  local counts = {}
  local full = false
  for i, key in ipairs(KEYS) do
    local c = tonumber(redis.call('GET', key) or '0')
    counts[i] = c
    if c >= tonumber(ARGV[2 * i - 1]) then full = true end
  end
  if full then return {0, unpack(counts)} end
  for i, key in ipairs(KEYS) do
    counts[i] = redis.call('INCR', key)
    if counts[i] == 1 then redis.call('PEXPIRE', key, ARGV[2 * i]) end
  end
  return {1, unpack(counts)}`;

/** Takes one from every counter still above 0. */
const GIVE_BACK_LUA = `
  for _, key in ipairs(KEYS) do
    if tonumber(redis.call('GET', key) or '0') > 0 then redis.call('DECR', key) end
  end
  return 0`;

/**
 * Sign-in attempts counted in Redis (REDIS_URL), shared by every server process: one counter per
 * key and window, which Redis drops after two windows.
 */
export function createRedisFailureCounter(url: string, prefix: string): FailureCounter & { close(): Promise<void> } {
  const redis = new Redis(url, { maxRetriesPerRequest: 2, enableOfflineQueue: true });
  const names = (slots: Slot[]) => slots.map((s) => `${prefix}:sign-in-failures:${s.key}:${s.windowStart}`);
  return {
    async take(slots) {
      const args = slots.flatMap((s) => [s.max, s.windowMs * 2]);
      const [taken, ...counts] = (await redis.eval(TAKE_LUA, slots.length, ...names(slots), ...args)) as number[];
      return { taken: taken === 1, counts: counts.map(Number) };
    },
    async giveBack(slots) {
      await redis.eval(GIVE_BACK_LUA, slots.length, ...names(slots));
    },
    async get(slots) {
      const values = await redis.mget(names(slots));
      return values.map((v) => Number(v ?? 0));
    },
    async close() {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
