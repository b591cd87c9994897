import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { isDatabaseUnavailable, openDb } from '../../src/db/db';
import { claimBody, createTestContext, type TestContext } from '../harness';
import { freePort } from '../processes';

/**
 * A DATABASE_URL listing several hosts with target_session_attrs=read-write (a failover
 * formation's URI): the service writes to the one primary whatever the order, a hot standby listed
 * first included (after a failover the old primary comes back as the standby), and with no primary
 * among them a connection fails at once instead of trying the hosts for ever. Uses the replica of
 * TEST_SEARCH_DATABASE_URL (scripts/start-replica.sh) as the standby.
 */
const primary = new URL(process.env.TEST_DATABASE_URL!);
const standby = new URL(process.env.TEST_SEARCH_DATABASE_URL!);
const hostsUrl = (hosts: string[]) =>
  `postgres://${primary.username || 'postgres'}@${hosts.join(',')}${primary.pathname}?target_session_attrs=read-write`;

describe('a DATABASE_URL with several hosts (target_session_attrs=read-write)', () => {
  let ctx: TestContext;

  beforeAll(async () => {
    ctx = await createTestContext({ DATABASE_URL: hostsUrl([standby.host, primary.host]) });
  });
  afterAll(async () => {
    await ctx?.close();
  });

  it('writes to the primary when a hot standby is listed first', async () => {
    const company = await ctx.newCompany('Multi-host');
    for (let i = 0; i < 3; i++) {
      const res = await ctx.app.inject({ method: 'POST', url: '/api/v1/claims', headers: company.auth, payload: claimBody() });
      expect(res.statusCode).toBe(201);
    }
  });

  it('fails a connection at once, as the database being unavailable, when no listed host is a primary', async () => {
    const db = await openDb({ kind: 'postgres', url: hostsUrl([`127.0.0.1:${await freePort()}`, standby.host]), poolSize: 1 });
    try {
      const started = Date.now();
      const err: unknown = await db.query('SELECT 1').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isDatabaseUnavailable(err)).toBe(true);
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      await db.close();
    }
  });
});
