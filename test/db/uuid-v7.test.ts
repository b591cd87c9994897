import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, type TestContext } from '../harness';

/**
 * Alerts and their look-up entries get their ids from the database's uuid_v7() (migration 0013):
 * version 7, variant RFC 9562, and in the order they were made, as the service's own ids are.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => {
  await ctx.close();
});

describe('uuid_v7()', () => {
  it('gives version-7 ids that start with the time in milliseconds and sort in the order they were made', async () => {
    const before = Date.now();
    const first = (await ctx.deps.db.query<{ id: string }>('SELECT uuid_v7()::text AS id'))[0]!.id;
    await new Promise((resolve) => setTimeout(resolve, 5));
    const rows = await ctx.deps.db.query<{ id: string }>('SELECT uuid_v7()::text AS id FROM generate_series(1, 50)');
    const after = Date.now();
    for (const id of [first, ...rows.map((r) => r.id)]) {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      const ms = parseInt(id.replace(/-/g, '').slice(0, 12), 16);
      expect(ms).toBeGreaterThanOrEqual(before);
      expect(ms).toBeLessThanOrEqual(after);
    }
    expect(new Set(rows.map((r) => r.id)).size).toBe(50);
    expect(rows.every((r) => r.id > first)).toBe(true);
  });
});
