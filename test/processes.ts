import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Redis } from 'ioredis';

/**
 * The tests' real processes: the service and the import worker started as `npm start` and
 * `npm run worker` start them (the npm script's own node command and flags, which the Dockerfile
 * and docker-compose.yml use too), stopped with a signal, waited for by what they print or answer.
 */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const scripts = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;

export type Child = ChildProcess & {
  /** What the process printed so far (stdout and stderr), unless its output goes to a log file. */
  output(): string;
};

const children = new Set<ChildProcess>();

/**
 * Starts `npm start` ('start') or `npm run worker` ('worker') as node itself runs them (no npm in
 * between: one process to signal): the built code in dist/, which test/build-once.ts builds before
 * the tests run. The environment is built from scratch (PATH and HOME, then
 * `env`), so a variable of the developer's shell cannot leak in. `entry` replaces the script's
 * file (the same node flags), for a test's own entry file (test/crash-worker.ts). With `logFile`
 * the output is appended there instead of being kept in memory.
 */
export function startScript(
  script: 'start' | 'worker',
  env: Record<string, string>,
  opts: { entry?: string; entryArgs?: string[]; logFile?: string } = {},
): Child {
  const [cmd, ...args] = scripts[script]!.replace(/^exec\s+/u, '').split(/\s+/u);
  if (cmd !== 'node') throw new Error(`npm run ${script} no longer starts node directly: ${scripts[script]}`);
  if (opts.entry) args[args.length - 1] = opts.entry;
  // A test's own entry in TypeScript runs under tsx, with the script's node flags.
  if (opts.entry?.endsWith('.ts')) args.splice(args.length - 1, 0, '--import', 'tsx');
  args.push(...(opts.entryArgs ?? []));
  let log: number | undefined;
  if (opts.logFile) {
    fs.mkdirSync(path.dirname(opts.logFile), { recursive: true });
    log = fs.openSync(opts.logFile, 'a');
  }
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    stdio: ['ignore', log ?? 'pipe', log ?? 'pipe'],
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
  }) as Child;
  if (log !== undefined) fs.closeSync(log);
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  child.output = () => (opts.logFile ? `(see ${opts.logFile})` : out);
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

/**
 * `npm run admin -- ...args` as an operator runs it (the npm script's node command), with an
 * environment built from scratch (PATH, HOME, TMPDIR, then `env`); resolves with its exit code and
 * output once it exits, killed after `timeoutMs`.
 */
export function runAdmin(
  env: Record<string, string>,
  args: string[],
  timeoutMs = 90_000,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const [cmd, ...nodeArgs] = scripts.admin!.replace(/^exec\s+/u, '').split(/\s+/u);
  if (cmd !== 'node') throw new Error(`npm run admin no longer starts node directly: ${scripts.admin}`);
  const childEnv = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', TMPDIR: os.tmpdir(), ...env };
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [...nodeArgs, ...args], { cwd: ROOT, env: childEnv, timeout: timeoutMs }, (err, stdout, stderr) => {
      if (err && typeof err.code !== 'number') return reject(new Error(`admin ${args.join(' ')} did not run`, { cause: err }));
      resolve({ code: err ? (err.code as number) : 0, stdout, stderr });
    });
  });
}

/** How a process ended (at once if it already has). */
export const exitOf = (child: ChildProcess) =>
  new Promise<{ code: number | null; signal: string | null }>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve({ code: child.exitCode, signal: child.signalCode });
    else child.once('exit', (code, signal) => resolve({ code, signal }));
  });

/** Sends `signal` and waits for the process to exit; nothing if it already has. */
export async function kill(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = exitOf(child);
  child.kill(signal);
  await exited;
}

/** SIGKILLs every process these helpers started that still runs (a test's afterAll/afterEach). */
export async function killAll(): Promise<void> {
  for (const child of [...children]) await kill(child, 'SIGKILL');
}

/** Asks `probe` every 50 ms until it gives a value (not undefined or false); throws, naming `what`, after `timeoutMs`. */
export async function until<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 60_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Waits until the process has printed `line`; throws if it exits first. */
export const printed = (child: Child, line: string) =>
  until(`"${line}" (output so far: ${child.output().slice(-500)})`, () => {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`exited before printing "${line}": ${child.output()}`);
    return child.output().includes(line);
  });

/** Waits until the service at `base` answers `path` (default /readyz) with a 2xx; throws if it exits first. */
export const answering = (child: Child, base: string, urlPath = '/readyz') =>
  until(`${base}${urlPath} to answer`, async () => {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`exited at start (code ${child.exitCode}): ${child.output().slice(-2000)}`);
    return fetch(base + urlPath).then(
      (r) => r.ok,
      () => false,
    );
  });

/** A TCP port nobody listens on right now, on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Removes a test's BullMQ keys (its own queue prefix) from Redis. */
export async function removeQueueKeys(redisUrl: string, prefix: string): Promise<void> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
  try {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
}
