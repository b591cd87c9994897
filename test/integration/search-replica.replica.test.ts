import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { openDb, type Db } from '../../src/db/db';
import { createTestContext, type Company, type TestContext } from '../harness';
import { until } from '../processes';
import { recordingLogger, searches, submit } from '../search-helpers';
import { startTcpProxy } from '../tcp-proxy';

/**
 * A real streaming replica of the test PostgreSQL (scripts/start-replica.sh; .ci/run starts it and
 * sets TEST_SEARCH_DATABASE_URL). Its WAL replay is paused while a claim is submitted: what the
 * searches then find (or not) shows where each read went. The app reaches the replica through a
 * proxy the test can cut.
 */
const replicaUrl = new URL(process.env.TEST_SEARCH_DATABASE_URL!);

let ctx: TestContext;
let replica: Db;
let proxy: Awaited<ReturnType<typeof startTcpProxy>>;
let schema: string;
let owner: Company;
let searcher: Company;
const log = recordingLogger();

beforeAll(async () => {
  proxy = await startTcpProxy({ host: replicaUrl.hostname, port: Number(replicaUrl.port || 5432) });
  const viaProxy = new URL(replicaUrl);
  viaProxy.host = `127.0.0.1:${proxy.port}`;
  ctx = await createTestContext({ SEARCH_DATABASE_URL: viaProxy.toString() }, { logger: log.logger });
  schema = (await ctx.deps.db.query<{ s: string }>('SELECT current_schema() AS s'))[0]!.s;
  replica = await openDb({ kind: 'postgres', url: replicaUrl.toString(), poolSize: 1 });
  owner = await ctx.newCompany('Owner');
  searcher = await ctx.newCompany('Searcher');
});
afterAll(async () => {
  // Never leave the replica paused for whoever uses it next.
  await replica?.query('SELECT pg_wal_replay_resume()').catch(() => {});
  await replica?.close();
  await ctx?.close();
  await proxy?.close();
});

/** Whether the replica has replayed the claim (false too while it has not replayed the schema yet). */
const onReplica = async (claimId: string) =>
  replica.query(`SELECT 1 FROM ${schema}.claims WHERE id = $1`, [claimId]).then(
    (rows) => rows.length === 1,
    () => false,
  );

/** Stops the replica's WAL replay (it still receives WAL) until `resume`; waits until it has stopped. */
async function pauseReplay() {
  await replica.query('SELECT pg_wal_replay_pause()');
  await until('the replay to pause', async () => {
    const [r] = await replica.query<{ state: string }>('SELECT pg_get_wal_replay_pause_state() AS state');
    return r!.state === 'paused';
  });
}
const resumeReplay = () => replica.query('SELECT pg_wal_replay_resume()');

describe('searches on a streaming replica', () => {
  it('read the replica (a claim it has not replayed is not found) while writes, own claims and the look-up log use the primary', async () => {
    expect((await replica.query<{ r: boolean }>('SELECT pg_is_in_recovery() AS r'))[0]!.r).toBe(true);
    const s = searches(ctx);
    const first = await submit(ctx, owner);
    await until('the replica to have the first claim', () => onReplica(first.id));

    await pauseReplay();
    try {
      const second = await submit(ctx, owner, { vehicle_registration: first.vehicle_registration });
      // The company's own claim: read on the primary, there at once.
      const own = await ctx.app.inject({ method: 'GET', url: `/api/v1/claims/${second.id}`, headers: owner.auth });
      expect(own.statusCode).toBe(200);
      expect(await onReplica(second.id)).toBe(false);

      // The cross-company reads: on the replica, which has the first claim and not the second.
      expect(await s.byPlate(searcher, first.vehicle_registration)).toEqual([first.id]);
      expect(await s.byPerson(searcher, first)).toEqual([first.id]);
      expect(await s.byPerson(searcher, second)).toEqual([]);
      expect(await s.matches(owner, first.id)).toEqual([]);
      // A claim the replica does not have yet: its matches are looked for on the primary.
      expect(await s.matches(owner, second.id)).toEqual([first.id]);
      const searchSessions = await replica.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'claims-search'`,
      );
      expect(searchSessions[0]!.n).toBeGreaterThan(0);

      // Every look-up's log entry was committed on the primary before its answer.
      const lookups = await ctx.app.inject({ method: 'GET', url: '/api/v1/lookups', headers: searcher.auth });
      expect(lookups.json().data.map((l: { kind: string }) => l.kind)).toEqual(['person_search', 'person_search', 'plate_search']);
    } finally {
      await resumeReplay();
    }

    const both = await until('the replica to replay the second claim', async () => {
      const found = await s.byPlate(searcher, first.vehicle_registration);
      return found.length === 2 && found;
    });
    expect(both).toContain(first.id);
    expect(log.warnings('search replica unavailable')).toHaveLength(0);
  });

  it('are answered from the primary, 200, when the replica is cut off, and from the replica again once it is back', async () => {
    const s = searches(ctx);
    const first = await submit(ctx, owner);
    await until('the replica to have the claim', () => onReplica(first.id));
    await pauseReplay();
    try {
      const second = await submit(ctx, owner, { vehicle_registration: first.vehicle_registration });
      expect(await s.byPlate(searcher, first.vehicle_registration)).toEqual([first.id]);

      proxy.cut();
      // The primary has both.
      expect((await s.byPlate(searcher, first.vehicle_registration)).sort()).toEqual([first.id, second.id].sort());
      expect(await s.byPerson(searcher, second)).toEqual([second.id]);
      expect(await s.matches(owner, first.id)).toEqual([second.id]);
      expect(log.warnings('search replica unavailable')).toHaveLength(1);

      // Back: once the retry interval is over, the searches read the (still paused) replica again.
      proxy.restore();
      await until('the searches to read the replica again', async () => {
        return (await s.byPlate(searcher, first.vehicle_registration)).length === 1;
      });
      expect(log.records.some((r) => r.msg.includes('search replica answers again'))).toBe(true);
    } finally {
      proxy.restore();
      await resumeReplay();
    }
  });
});
