import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { startRetentionSchedule } from '../../src/domain/registry/retention-schedule';

const quiet = { info: () => {}, error: () => {} };
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('retention schedule', () => {
  it('asks a minute after start and then every hour, until stopped; the database decides whether a purge is due', async () => {
    let asked = 0;
    const stop = startRetentionSchedule({ purgeIfDue: async () => (asked++, null) }, quiet);
    await vi.advanceTimersByTimeAsync(MINUTE - 1);
    expect(asked).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(asked).toBe(1);
    await vi.advanceTimersByTimeAsync(HOUR - MINUTE);
    expect(asked).toBe(2);
    await vi.advanceTimersByTimeAsync(HOUR);
    expect(asked).toBe(3);
    stop();
    await vi.advanceTimersByTimeAsync(24 * HOUR);
    expect(asked).toBe(3);
  });

  it('logs a failed purge and keeps checking', async () => {
    let asked = 0;
    const errors: string[] = [];
    const stop = startRetentionSchedule(
      {
        purgeIfDue: async () => {
          asked++;
          throw new Error('database down');
        },
      },
      { info: () => {}, error: (_o, msg) => errors.push(msg) },
      { firstCheckAfterMs: 1, checkEveryMs: 10 },
    );
    await vi.advanceTimersByTimeAsync(11);
    stop();
    expect(asked).toBe(2);
    expect(errors).toHaveLength(2);
    expect(errors[0]).toMatch(/retention purge failed/);
  });
});
