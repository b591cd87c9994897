import { afterEach, describe, expect, it } from 'vitest';

import { isDatabaseUnavailable, openDb, type Db } from '../../src/db/db';
import { startTcpProxy } from '../tcp-proxy';

/**
 * The PostgreSQL driver, postgres.js 3.4.9, is patched (patches/postgres+3.4.9.patch, applied by
 * npm install): without the patch, a query written to a connection between its socket's error and
 * close events waited for ever, and the connection's next write (its reconnect's startup message)
 * waited on a cleared timer until the 30 s connect timeout, every time. A database restart then
 * left requests hanging and the service answering 503 long after the database was back.
 */
describe('the database driver after a lost connection', () => {
  let db: Db | undefined;
  let proxy: Awaited<ReturnType<typeof startTcpProxy>> | undefined;
  afterEach(async () => {
    proxy?.restore();
    await db?.close();
    await proxy?.close();
  });

  /**
   * The query's outcome, or 'pending' if it has not settled within `ms`: longer than the driver's
   * reconnect back-off after a few failures (3^n / 100 s), shorter than its 30 s connect timeout.
   */
  const settled = (q: Promise<unknown>, ms: number) => {
    let timer: NodeJS.Timeout | undefined;
    return Promise.race([
      q.then(
        () => 'ok',
        (err: unknown) => (isDatabaseUnavailable(err) ? 'unavailable' : `error: ${String(err)}`),
      ),
      new Promise<string>((resolve) => (timer = setTimeout(() => resolve('pending'), ms))),
    ]).finally(() => clearTimeout(timer));
  };

  it('settles every query while the connections drop, and answers again as soon as the database is back', async () => {
    const target = new URL(process.env.TEST_DATABASE_URL!);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    const viaProxy = new URL(target);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    db = await openDb({ kind: 'postgres', url: viaProxy.toString(), poolSize: 2 });
    const select = () => db!.query('SELECT 1 AS one');
    expect(await Promise.all([select(), select()])).toEqual([[{ one: 1 }], [{ one: 1 }]]);

    proxy.cut();
    // One query fails on a dropped connection; the next two are sent while it is still closing.
    const outcomes: string[] = [];
    for (let round = 0; round < 2; round++) {
      outcomes.push(await settled(select(), 25_000));
      outcomes.push(...(await Promise.all([settled(select(), 25_000), settled(select(), 25_000)])));
    }
    expect(outcomes).toEqual(Array(6).fill('unavailable'));

    proxy.restore();
    // The first queries after the cut may wait out the reconnect back-off; none waits for the
    // connect timeout.
    const after: string[] = [];
    for (let round = 0; round < 3; round++) {
      after.push(...(await Promise.all([settled(select(), 25_000), settled(select(), 25_000)])));
    }
    expect(after).toEqual(Array(6).fill('ok'));
  }, 180_000);
});
