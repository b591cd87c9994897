import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { startRetentionSchedule } from '../../src/domain/registry/retention-schedule';

const quiet = { debug: () => {}, info: () => {}, error: () => {} };
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

  it('says at debug level when the purge was not due, and at info level what a purge removed', async () => {
    const lines: string[] = [];
    let due = true;
    const stop = startRetentionSchedule(
      { purgeIfDue: async () => (due ? ((due = false), { claims_deleted: 1 } as never) : null) },
      { debug: (msg) => lines.push(`debug ${msg}`), info: (_o, msg) => lines.push(`info ${msg}`), error: () => {} },
      { firstCheckAfterMs: 1, checkEveryMs: 10 },
    );
    await vi.advanceTimersByTimeAsync(11);
    stop();
    expect(lines).toEqual(['info retention purge done', expect.stringMatching(/^debug retention purge not due/u)]);
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
      { debug: () => {}, info: () => {}, error: (_o, msg) => errors.push(msg) },
      { firstCheckAfterMs: 1, checkEveryMs: 10 },
    );
    await vi.advanceTimersByTimeAsync(11);
    stop();
    expect(asked).toBe(2);
    expect(errors).toHaveLength(2);
    expect(errors[0]).toMatch(/retention purge failed/);
  });
});
