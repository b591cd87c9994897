import net from 'node:net';

import { afterEach, describe, expect, it } from 'vitest';

import { createTestContext, type TestContext } from '../harness';
import { freePort, until } from '../processes';
import { recordingLogger, searches, submit } from '../search-helpers';
import { startTcpProxy } from '../tcp-proxy';

/**
 * With SEARCH_DATABASE_URL, the plate search, the person search and the matches read the search
 * replica; when it cannot be reached (refused, timed out, cut) they are answered from the primary,
 * 200, never a 500, with one warning per episode that never shows the URL's password. The
 * "replica" here is the test's PostgreSQL behind a proxy that the test cuts (the real streaming
 * replica: search-replica.replica.test.ts).
 */
const primary = new URL(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test');
const PASSWORD = 'replica-secret-pw';
const WARNING = 'search replica unavailable';

/** The test database's URL, on another port, with a password in it (trust auth ignores it). */
const replicaUrl = (port: number) => `postgres://${primary.username || 'postgres'}:${PASSWORD}@127.0.0.1:${port}${primary.pathname}`;

const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

async function world(searchUrl: string) {
  const log = recordingLogger();
  const ctx: TestContext = await createTestContext({ SEARCH_DATABASE_URL: searchUrl }, { logger: log.logger });
  closing.push(() => ctx.close());
  const owner = await ctx.newCompany('Owner');
  const searcher = await ctx.newCompany('Searcher');
  const first = await submit(ctx, owner);
  // Same plate, same person: each claim matches the other.
  const second = await submit(ctx, owner, { vehicle_registration: first.vehicle_registration });
  const s = searches(ctx);
  /** The three searches, and what each must find. */
  const allAnswered = async () => {
    expect((await s.byPlate(searcher, first.vehicle_registration)).sort()).toEqual([first.id, second.id].sort());
    expect(await s.byPerson(searcher, first)).toEqual([first.id]);
    expect(await s.matches(owner, first.id)).toEqual([second.id]);
  };
  return { ctx, log, allAnswered };
}

describe('searches when the search replica is unreachable', () => {
  it('are answered from the primary while the replica is cut, with one warning per episode, and go back to it once it answers', async () => {
    const proxy = await startTcpProxy({ host: primary.hostname, port: Number(primary.port || 5432) });
    closing.push(() => proxy.close());
    const { ctx, log, allAnswered } = await world(replicaUrl(proxy.port));

    await allAnswered();
    // The search pool did connect through the proxy (the reads above went there).
    const viaReplica = await ctx.deps.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'claims-search' AND datname = current_database()`,
    );
    expect(viaReplica[0]!.n).toBeGreaterThan(0);
    expect(log.warnings(WARNING)).toHaveLength(0);

    proxy.cut();
    for (let i = 0; i < 3; i++) await allAnswered();
    expect(log.warnings(WARNING)).toHaveLength(1);
    expect(log.warnings(WARNING)[0]).toMatchObject({ replica: `127.0.0.1:${proxy.port}` });

    // Back: within the retry interval a search tries the replica again, and says so once.
    proxy.restore();
    await until('a search to find the replica again', async () => {
      await allAnswered();
      return log.records.some((r) => r.msg.includes('search replica answers again'));
    });

    // A new episode, a new warning.
    proxy.cut();
    await allAnswered();
    expect(log.warnings(WARNING)).toHaveLength(2);
    expect(log.lines.join('')).not.toContain(PASSWORD);
  });

  it('are answered from the primary when the replica goes silent on open connections (no answer within 5 s)', async () => {
    const proxy = await startTcpProxy({ host: primary.hostname, port: Number(primary.port || 5432) });
    closing.push(() => proxy.close());
    const { log, allAnswered } = await world(replicaUrl(proxy.port));
    await allAnswered();
    proxy.hold();
    await allAnswered();
    expect(log.warnings(WARNING)).toHaveLength(1);
    expect(log.warnings(WARNING)[0]).toMatchObject({ code: 'SEARCH_REPLICA_TIMEOUT' });
  });

  it('are answered from the primary when nothing listens at the replica (connection refused)', async () => {
    const { log, allAnswered } = await world(replicaUrl(await freePort()));
    await allAnswered();
    await allAnswered();
    expect(log.warnings(WARNING)).toHaveLength(1);
    expect(log.warnings(WARNING)[0]).toMatchObject({ code: 'ECONNREFUSED' });
    expect(log.lines.join('')).not.toContain(PASSWORD);
  });

  it('are answered from the primary when the replica accepts connections and never answers (connect timeout)', async () => {
    const held = new Set<net.Socket>();
    const silent = net.createServer((socket) => void held.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    closing.push(async () => {
      for (const s of held) s.destroy();
      await new Promise((resolve) => silent.close(resolve));
    });
    const { log, allAnswered } = await world(replicaUrl((silent.address() as net.AddressInfo).port));
    await allAnswered();
    expect(log.warnings(WARNING)).toHaveLength(1);
    expect(log.warnings(WARNING)[0]).toMatchObject({ code: 'CONNECT_TIMEOUT' });
  });
});
