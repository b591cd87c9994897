import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestContext, type TestContext } from '../harness';

/**
 * The embedded database has one session: a statement sent while a transaction holds it waits for
 * the transaction's end, rather than running inside it (where it would see, or break, the
 * transaction's uncommitted work). On PostgreSQL such a statement takes another connection.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
  await ctx.deps.db.exec('CREATE TABLE IF NOT EXISTS session_probe (id int PRIMARY KEY)');
});
afterAll(async () => ctx?.close());

describe('the embedded session', () => {
  it("makes a statement sent during a transaction wait for the transaction's end", async () => {
    const order: string[] = [];
    let seen!: Promise<{ n: number }[]>;
    const tx = ctx.deps.db.transaction(async (q) => {
      await q.query('INSERT INTO session_probe (id) VALUES (3)');
      seen = ctx.deps.db.query<{ n: number }>('SELECT count(*)::int AS n FROM session_probe').then((rows) => {
        order.push('statement');
        return rows;
      });
      // A round trip of the transaction's own, sent after the statement: a statement that did not
      // wait would be answered before it.
      await q.query('SELECT 1');
      order.push('transaction');
      throw new Error('rolled back');
    });
    await expect(tx).rejects.toThrow('rolled back');
    expect((await seen)[0]!.n).toBe(0);
    expect(order).toEqual(['transaction', 'statement']);
  });
});
