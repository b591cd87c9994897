import { describe, expect, it } from 'vitest';

import { startRetentionSchedule } from '../../src/domain/registry/retention-schedule';

const quiet = { info: () => {}, error: () => {} };
const waitFor = async (cond: () => boolean) => {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
};

describe('retention schedule', () => {
  it('asks shortly after start and then at every interval; the database decides whether a purge is due', async () => {
    let asked = 0;
    const stop = startRetentionSchedule({ purgeIfDue: async () => (asked++, null) }, quiet, { firstCheckAfterMs: 1, checkEveryMs: 20 });
    await waitFor(() => asked >= 3);
    stop();
    const after = asked;
    await new Promise((r) => setTimeout(r, 60));
    expect(after).toBeGreaterThanOrEqual(3);
    expect(asked).toBe(after); // stopped: no more checks
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
    await waitFor(() => asked >= 2);
    stop();
    expect(errors[0]).toMatch(/retention purge failed/);
  });
});
