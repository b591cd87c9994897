import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterAll, afterEach, describe, expect, it } from 'vitest';

import { DatabaseLockedError, openDb } from '../../src/db/db';
import { exitOf, freePort, killAll, printed, startScript } from '../processes';

/**
 * `npm start` on the embedded database, killed with SIGKILL: it leaves its database's lock behind,
 * and the next start takes it at once. (SIGTERM on PostgreSQL: process-stop.postgres.test.ts.)
 */
afterEach(killAll);

describe('the embedded database after a SIGKILL', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'claims-stop-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('is refused while its holder lives, and taken at once when the holder was killed', async () => {
    const port = await freePort();
    const server = startScript('start', { LOG_LEVEL: 'info', HOST: '127.0.0.1', DATA_DIR: dir, PORT: String(port) });
    await printed(server, 'claims registry ready');
    const pgdata = path.join(dir, 'pgdata');
    await expect(openDb({ kind: 'pglite', dataDir: pgdata })).rejects.toBeInstanceOf(DatabaseLockedError);

    server.kill('SIGKILL');
    await exitOf(server);
    const db = await openDb({ kind: 'pglite', dataDir: pgdata });
    try {
      expect((await db.query<{ n: number }>('SELECT count(*)::int AS n FROM companies'))[0]!.n).toBe(0);
    } finally {
      await db.close();
    }
  }, 120_000);
});
