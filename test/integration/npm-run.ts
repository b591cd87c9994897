import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

import { afterEach, expect } from 'vitest';

import { createTestContext, dbKind, TEST_HASH_KEY } from '../harness';
import { ROOT } from '../processes';

/**
 * `npm start` and `npm run worker` through npm itself, as a supervisor starts them (npm-signals
 * tests): the processes npm started, found in /proc, are SIGKILLed after each test.
 */
const root = ROOT;
const started = new Set<number>();

afterEach(() => {
  for (const pid of started) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  started.clear();
});

/** The processes under `pid`, from /proc: children, their children, and so on. */
export function descendants(pid: number): number[] {
  const parentOf = new Map<number, number>();
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/u.test(name)) continue;
    try {
      // The field after the command (in parentheses, which may hold spaces) is the state, then the parent's pid.
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      parentOf.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const found: number[] = [];
  const walk = (p: number) => {
    for (const [child, parent] of parentOf) {
      if (parent === p) {
        found.push(child);
        walk(child);
      }
    }
  };
  walk(pid);
  return found;
}

export const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    // A zombie is dead but not yet reaped; it answers the signal check.
    return !fs.readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
  } catch {
    return false;
  }
};

export const portOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

/** `npm <args>` as a supervisor starts it; resolves once `readyLine` is printed. */
export async function startNpm(args: string[], env: Record<string, string>, readyLine: string) {
  const npm = spawn('npm', args, {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      DOCUMENT_HASH_KEY: TEST_HASH_KEY,
      SESSION_SECRET: 'test-session-secret-0123456789abcdef0123',
      ...env,
    },
  });
  started.add(npm.pid!);
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    npm.once('exit', (code, signal) => resolve({ code, signal })),
  );
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (d: Buffer) => {
      out += d.toString();
      if (out.includes(readyLine)) resolve();
    };
    npm.stdout.on('data', onData);
    npm.stderr.on('data', onData);
    void exited.then(() => reject(new Error(`npm ${args.join(' ')} exited before it was ready: ${out.slice(-2000)}`)));
  });
  const under = descendants(npm.pid!);
  for (const pid of under) started.add(pid);
  return { npm, under, exited, output: () => out };
}

/** Signals npm's own process and checks that it and everything it started are gone, npm with 0. */
export async function stopThroughNpm(run: Awaited<ReturnType<typeof startNpm>>, signal: 'SIGTERM' | 'SIGINT', port?: number) {
  // node runs under npm (the precondition of the test: something for the signal to reach).
  expect(run.under.length).toBeGreaterThan(0);
  expect(run.under.some((pid) => fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('dist/main-'))).toBe(true);
  run.npm.kill(signal);
  expect(await run.exited, run.output().slice(-2000)).toEqual({ code: 0, signal: null });
  // npm exits once its child has: nothing it started may outlive it.
  expect(run.under.filter(alive)).toEqual([]);
  if (port !== undefined) expect(await portOpen(port)).toBe(false);
}

type Ctx = Awaited<ReturnType<typeof createTestContext>>;

/** What `npm start` needs on this test run's database: embedded in a folder of its own, or this test's PostgreSQL schema. */
export async function serverEnv(): Promise<{ env: Record<string, string>; cleanUp: () => Promise<void>; ctx?: Ctx }> {
  if (dbKind() === 'postgres') {
    const ctx = await createTestContext();
    const schema = (await ctx.deps.db.query<{ s: string }>('SELECT current_schema() AS s'))[0]!.s;
    return {
      ctx,
      env: { DATABASE_URL: process.env.TEST_DATABASE_URL!, DB_SEARCH_PATH: schema, DB_POOL_SIZE: '2', DATA_DIR: ctx.config.dataDir },
      cleanUp: () => ctx.close(),
    };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'claims-npm-'));
  return { env: { DATA_DIR: dir }, cleanUp: async () => fs.rmSync(dir, { recursive: true, force: true }) };
}
