import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { pgErrorCode } from '../../src/db/db';
import { createTestContext, type TestContext } from '../harness';

/**
 * The database as the server uses it, embedded or PostgreSQL: a long statement does not stop the
 * server answering, a failed statement keeps PostgreSQL's error code, and a transaction's rows are
 * all there or none. The embedded database's one session: embedded-session.pglite.test.ts.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
  await ctx.deps.db.exec('CREATE TABLE IF NOT EXISTS session_probe (id int PRIMARY KEY)');
});
afterAll(async () => {
  await ctx.deps.db.exec('DROP TABLE IF EXISTS session_probe');
  await ctx.close();
});

describe('the database session', () => {
  it('leaves the server answering while a long statement runs', async () => {
    let finished = false;
    const slow = ctx.deps.db.query('SELECT pg_sleep(1)').then(() => (finished = true));
    const res = await ctx.app.inject({ method: 'GET', url: '/healthz' });
    expect(res.statusCode).toBe(200);
    // Embedded, PGlite runs on a thread of its own: the statement is still running.
    expect(finished).toBe(false);
    await slow;
  });

  it("keeps PostgreSQL's error code", async () => {
    await ctx.deps.db.query('INSERT INTO session_probe (id) VALUES (1)');
    const err = await ctx.deps.db.query('INSERT INTO session_probe (id) VALUES (1)').catch((e: unknown) => e);
    expect(pgErrorCode(err)).toBe('23505');
    await ctx.deps.db.query('DELETE FROM session_probe');
  });

  it('writes a failed transaction not at all: a statement sent meanwhile does not see its row, nor one sent after', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let inserted!: () => void;
    const insertedRow = new Promise<void>((resolve) => (inserted = resolve));
    const tx = ctx.deps.db.transaction(async (q) => {
      await q.query('INSERT INTO session_probe (id) VALUES (2)');
      inserted();
      await held;
      throw new Error('changed its mind');
    });
    tx.catch(() => {});
    await insertedRow;
    // Sent while the transaction holds its row: it must not see it, before or after the rollback.
    const seen = ctx.deps.db.query<{ n: number }>('SELECT count(*)::int AS n FROM session_probe');
    release();
    await expect(tx).rejects.toThrow('changed its mind');
    expect((await seen)[0]!.n).toBe(0);
    expect((await ctx.deps.db.query<{ n: number }>('SELECT count(*)::int AS n FROM session_probe'))[0]!.n).toBe(0);
  });
});
