import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';

import { loadConfig } from '../../src/config';
import { openDb, type Queryable } from '../../src/db/db';
import { openDeps } from '../../src/startup';
import { claimBody, createTestContext, dbKind, TEST_HASH_KEY, TEST_PASSWORD_HASH_COST } from '../harness';
import { freePort, kill, killAll, printed, startScript, until, type Child } from '../processes';

/**
 * The look-up log has no hole: a search is answered only once its entry is committed, so a
 * server killed with SIGKILL in the middle of a search load leaves an entry for every search it
 * answered 200. Each search carries its own purpose, by which its entry is found.
 */
const SESSION_SECRET = 'test-session-secret-0123456789abcdef0123';
const CONNECTIONS = 8;
/** Answers to wait for before the kill: enough for the load to be at full speed. */
const ANSWERED_BEFORE_KILL = 300;

afterEach(killAll);

/** The server as `npm start` runs it, answering on a free port. */
async function startServer(env: Record<string, string>): Promise<{ child: Child; base: string }> {
  const port = await freePort();
  const child = startScript('start', {
    HOST: '127.0.0.1',
    PORT: String(port),
    LOG_LEVEL: 'info',
    DOCUMENT_HASH_KEY: TEST_HASH_KEY,
    SESSION_SECRET,
    ...env,
  });
  await printed(child, 'claims registry ready');
  return { child, base: `http://127.0.0.1:${port}` };
}

/** Searches at full speed on `CONNECTIONS` connections until the server goes away. */
function searchLoad(base: string, token: string, plate: string) {
  const answered: string[] = [];
  let cut = 0;
  let n = 0;
  const loop = async () => {
    for (;;) {
      const purpose = `load-${n++}`;
      try {
        const res = await fetch(`${base}/api/v1/claims/search-by-plate`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json' },
          body: JSON.stringify({ vehicle_registration: plate, purpose }),
        });
        if (res.status === 200) answered.push(purpose);
        await res.arrayBuffer();
      } catch {
        cut++;
        return;
      }
    }
  };
  const done = Promise.all(Array.from({ length: CONNECTIONS }, loop));
  return { answered, cutOff: () => cut, done };
}

/** The world the server runs on: one company with a claim on the plate, another that searches it. */
type World = {
  env: Record<string, string>;
  /** The searcher's look-up log entries: purpose and result count. */
  readLog: () => Promise<Map<string, number>>;
  searcher: { id: string; token: string };
  plate: string;
  cleanUp: () => Promise<void>;
};

async function logOf(db: Queryable, companyId: string): Promise<Map<string, number>> {
  const rows = await db.query<{ purpose: string; result_count: number }>(
    'SELECT purpose, result_count FROM lookups WHERE company_id = $1',
    [companyId],
  );
  return new Map(rows.map((r) => [r.purpose, r.result_count]));
}

async function embeddedWorld(): Promise<World> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'claims-lookups-'));
  const env = { DATA_DIR: dir };
  const config = loadConfig({ ...env, DOCUMENT_HASH_KEY: TEST_HASH_KEY, SESSION_SECRET, LOG_LEVEL: 'silent' });
  const deps = await openDeps({ ...config, passwordHashCost: TEST_PASSWORD_HASH_COST }, { logger: pino({ level: 'silent' }) });
  const plate = `KILL${randomBytes(3).toString('hex').toUpperCase()}`;
  try {
    const owner = await deps.companies.createCompany('Owner');
    const { token: ownerToken } = await deps.tokens.create(owner.id, 'owner');
    const ownerPrincipal = await deps.tokens.authenticate(ownerToken);
    await deps.claims.submit(ownerPrincipal!, claimBody({ vehicle_registration: plate }));
    const searcher = await deps.companies.createCompany('Searcher');
    const { token } = await deps.tokens.create(searcher.id, 'searcher');
    return {
      env,
      plate,
      searcher: { id: searcher.id, token },
      readLog: async () => {
        // The killed server's lock is left behind; it is taken over at once.
        const db = await openDb({ kind: 'pglite', dataDir: path.join(dir, 'pgdata') });
        try {
          return await logOf(db, searcher.id);
        } finally {
          await db.close();
        }
      },
      cleanUp: async () => fs.rmSync(dir, { recursive: true, force: true }),
    };
  } finally {
    await deps.close();
  }
}

async function postgresWorld(): Promise<World> {
  const ctx = await createTestContext();
  const schema = (await ctx.deps.db.query<{ s: string }>('SELECT current_schema() AS s'))[0]!.s;
  const owner = await ctx.newCompany('Owner');
  const plate = `KILL${randomBytes(3).toString('hex').toUpperCase()}`;
  const res = await ctx.app.inject({
    method: 'POST',
    url: '/api/v1/claims',
    headers: owner.auth,
    payload: claimBody({ vehicle_registration: plate }),
  });
  expect(res.statusCode, res.body).toBe(201);
  const searcher = await ctx.newCompany('Searcher');
  return {
    env: { DATABASE_URL: process.env.TEST_DATABASE_URL!, DB_SEARCH_PATH: schema, DB_POOL_SIZE: '4', DATA_DIR: ctx.config.dataDir },
    plate,
    searcher,
    readLog: () => logOf(ctx.deps.db, searcher.id),
    cleanUp: () => ctx.close(),
  };
}

describe('look-ups answered before a SIGKILL', () => {
  it('every search answered 200 has its entry in the look-up log', async () => {
    const world = dbKind() === 'postgres' ? await postgresWorld() : await embeddedWorld();
    try {
      const server = await startServer(world.env);
      const load = searchLoad(server.base, world.searcher.token, world.plate);
      await until(`${ANSWERED_BEFORE_KILL} answered searches`, () => load.answered.length >= ANSWERED_BEFORE_KILL, 120_000);
      await kill(server.child, 'SIGKILL');
      await load.done;
      // The kill came in the middle of the load: searches were in flight and were cut off.
      expect(load.cutOff()).toBe(CONNECTIONS);

      const logged = await world.readLog();
      const missing = load.answered.filter((p) => !logged.has(p));
      expect(missing, `${missing.length} of ${load.answered.length} answered searches have no entry`).toEqual([]);
      expect(logged.get(load.answered[0]!)).toBe(1);
    } finally {
      await world.cleanUp();
    }
  }, 180_000);
});
