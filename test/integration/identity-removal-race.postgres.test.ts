import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { addDays, claimBody, createTestContext, type TestContext } from '../harness';
import { until } from '../processes';

/**
 * A submission racing the retention purge's removal of the person it found. PostgreSQL only: the
 * removal holds its transaction open while the submission waits on it, which the embedded
 * database's one session cannot do (a statement there waits for the whole transaction).
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(async () => ctx?.close());

describe('a person removed while a submission uses it', () => {
  it('answers 201 with a new person when the person it found is removed (retention) before its claim is written', async () => {
    const company = await ctx.newCompany();
    const client = { date_of_birth: '1969-09-09', id_documents: [{ type: 'passport', number: `C${randomBytes(6).toString('hex')}` }] };
    const post = () =>
      ctx.app.inject({
        method: 'POST',
        url: '/api/v1/claims',
        headers: company.auth,
        payload: claimBody({ claim_date: addDays(ctx.deps.today(), -2) }, client),
      });
    const first = await post();
    expect(first.statusCode, first.body).toBe(201);
    const person = first.json().data.client.id as string;

    // The purge's removal of the person (claims, then the client and its documents), not yet committed.
    let commit!: () => void;
    const committed = new Promise<void>((resolve) => (commit = resolve));
    let removing!: (pid: number) => void;
    const removed = new Promise<number>((resolve) => (removing = resolve));
    const removal = ctx.deps.db.transaction(async (tx) => {
      await tx.query('DELETE FROM claims WHERE client_id = $1', [person]);
      await tx.query('DELETE FROM clients WHERE id = $1', [person]);
      const [{ pid }] = (await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')) as [{ pid: number }];
      removing(pid);
      await committed;
    });
    const removalPid = await removed;

    // The submission still finds the person (the removal is not committed), and its claim's write
    // waits on the person's row, held by the removal: the race this test is about, checked, not hoped for.
    const submitting = post();
    await until(
      'the claim write to wait on the removal',
      async () => {
        const [blocked] = await ctx.deps.db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE $1 = ANY (pg_blocking_pids(pid)) AND query LIKE '%new_claims%'`,
          [removalPid],
        );
        return blocked!.n > 0;
      },
      20_000,
    );
    commit();
    await removal;

    const res = await submitting;
    expect(res.statusCode, res.body).toBe(201);
    const now = res.json().data.client.id as string;
    expect(now).not.toBe(person);
    const [row] = await ctx.deps.db.query<{ n: number }>('SELECT count(*)::int AS n FROM claims WHERE client_id = $1', [now]);
    expect(row!.n).toBe(1);
  });
});
