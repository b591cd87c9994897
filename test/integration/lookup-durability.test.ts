import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';

import { loadConfig } from '../../src/config';
import { openDb, type Queryable } from '../../src/db/db';
import { createDeps } from '../../src/deps';
import { claimBody, createTestContext, dbKind, TEST_HASH_KEY, TEST_PASSWORD_HASH_COST } from '../harness';

/**
 * The look-up log has no hole: a search is answered only once its entry is committed, so a
 * server killed with SIGKILL in the middle of a search load leaves an entry for every search it
 * answered 200. Each search carries its own purpose, by which its entry is found.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SESSION_SECRET = 'test-session-secret-0123456789abcdef0123';
const CONNECTIONS = 8;
/** Answers to wait for before the kill: enough for the load to be at full speed. */
const ANSWERED_BEFORE_KILL = 300;

const children = new Set<ChildProcess>();
afterEach(() => {
  for (const child of children) child.kill('SIGKILL');
});

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The server as `npm start` runs it, answering on a free port. */
async function startServer(env: Record<string, string>): Promise<{ child: ChildProcess; base: string; exited: Promise<unknown> }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main-api.ts'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'info',
      DOCUMENT_HASH_KEY: TEST_HASH_KEY,
      SESSION_SECRET,
      ...env,
    },
  });
  children.add(child);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (d: Buffer) => {
      out += d.toString();
      if (out.includes('claims registry ready')) resolve();
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', () => reject(new Error(`the server exited before it was ready: ${out.slice(-2000)}`)));
  });
  return { child, base: `http://127.0.0.1:${port}`, exited };
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

async function until(what: string, probe: () => boolean): Promise<void> {
  for (let i = 0; i < 2400 && !probe(); i++) await new Promise((r) => setTimeout(r, 25));
  if (!probe()) throw new Error(`timed out waiting for ${what}`);
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
  const deps = await createDeps(config, { logger: pino({ level: 'silent' }), testPasswordHashCost: TEST_PASSWORD_HASH_COST });
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
      await until(`${ANSWERED_BEFORE_KILL} answered searches`, () => load.answered.length >= ANSWERED_BEFORE_KILL);
      server.child.kill('SIGKILL');
      await server.exited;
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
