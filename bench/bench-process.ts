/**
 * What the HTTP benchmarks on an existing, seeded database share (bench/alerts-quality.ts,
 * bench/lookup-batch.ts): starting the service's own processes on 127.0.0.1, their memory, a
 * throw-away API token, and keeping the daily retention run out of the measured window.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import type { Queryable } from '../src/db/db';
import { createTokenRepository } from '../src/db/token-repository';
import { TOKEN_SCOPES } from '../src/domain/tokens/scopes';
import { TOKEN_PREFIX } from '../src/domain/tokens/token-service';

export const freePort = () => 20_000 + Math.floor(Math.random() * 40_000);

/** Every per-minute and per-hour abuse limit of the service, on as in production but where a bench never reaches it (as the team bench sets them). */
export const NEVER_TRIPPING_LIMITS: Record<string, string> = Object.fromEntries(
  [
    'RATE_LIMIT_PER_MINUTE',
    'COMPANY_RATE_LIMIT_PER_MINUTE',
    'SESSION_RATE_LIMIT_PER_MINUTE',
    'AUTH_FAILURES_PER_MINUTE',
    'IDENTITY_MISMATCHES_PER_HOUR',
  ].map((name) => [name, '1000000000']),
);

/** BENCH_NODE_FLAGS, given to the measured server's node (`--max-semi-space-size=1`, say). */
export const benchNodeFlags = (): string[] => process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? [];

/** Starts `node <args>` from the project root with only `env` (and PATH, HOME), its output into `<outDir>/<name>.log`. */
export function startNode(name: string, args: string[], env: Record<string, string>, outDir: string): ChildProcess {
  fs.mkdirSync(outDir, { recursive: true });
  const log = fs.openSync(path.join(outDir, `${name}.log`), 'w');
  const child = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', log, log],
  });
  fs.closeSync(log);
  return child;
}

/** Until `url` answers 2xx (60 s at most), or throws naming the process's log. */
export async function waitReady(child: ChildProcess, url: string, name: string, outDir: string): Promise<void> {
  for (let i = 0; i < 120; i++) {
    if (child.exitCode !== null) break;
    if (
      await fetch(url).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await sleep(500);
  }
  throw new Error(`${name} did not become ready; see ${path.join(outDir, `${name}.log`)}`);
}

/** SIGTERM, then SIGKILL after 25 s: the process started here, by its own handle. */
export async function stopNode(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  if ((await Promise.race([exited.then(() => true), sleep(25_000).then(() => false)])) === false) {
    child.kill('SIGKILL');
    await exited;
  }
}

/** A field of /proc/<pid>/status in MB (VmRSS now, VmHWM the peak so far), or null (not Linux, process gone). */
export function procMb(pid: number | undefined, field: 'VmRSS' | 'VmHWM'): number | null {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'mu').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : null;
  } catch {
    return null;
  }
}

/** The company named `name`, or else the company with the most claims. */
export async function benchCompany(db: Queryable, name: string | undefined): Promise<{ id: string; name: string }> {
  const rows = name
    ? await db.query<{ id: string; name: string }>('SELECT id, name FROM companies WHERE name = $1', [name])
    : await db.query<{ id: string; name: string }>(
        `SELECT co.id, co.name FROM companies co
           JOIN LATERAL (SELECT count(*) AS n FROM claims c WHERE c.company_id = co.id) x ON true
          ORDER BY x.n DESC LIMIT 1`,
      );
  if (!rows[0]) throw new Error(name ? `no company named "${name}"` : 'no company');
  return rows[0];
}

/** A new API token of the company, stored as the service stores them (its SHA-256); delete it with deleteBenchToken. */
export async function createBenchToken(db: Queryable, companyId: string, name: string): Promise<{ id: string; token: string }> {
  const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
  const record = await createTokenRepository(db).insert({
    companyId,
    name,
    hash: createHash('sha256').update(token).digest('hex'),
    prefix: token.slice(0, TOKEN_PREFIX.length + 6),
    last4: token.slice(-4),
    scopes: [...TOKEN_SCOPES],
    expiresAt: null,
    createdByUserId: null,
  });
  return { id: record.id, token };
}

export async function deleteBenchToken(db: Queryable, tokenId: string): Promise<void> {
  await db.query('DELETE FROM api_tokens WHERE id = $1', [tokenId]);
}

/**
 * Marks the daily retention run as just done, so that no process started by the benchmark runs it
 * in the measured window (its first check comes a minute after start); the returned function puts
 * the recorded time back.
 */
export async function holdRetention(db: Queryable): Promise<() => Promise<void>> {
  const [row] = await db.query<{ value: string }>(`SELECT value FROM app_meta WHERE key = 'retention_last_run'`);
  await db.query(
    `UPDATE app_meta SET value = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') WHERE key = 'retention_last_run'`,
  );
  return async () => {
    if (row) await db.query(`UPDATE app_meta SET value = $1 WHERE key = 'retention_last_run'`, [row.value]);
  };
}

/** The q-quantile (0–1) of ascending-sorted values, nearest rank. */
export const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? Number.NaN;

/** Stops the benchmark on Ctrl-C or SIGTERM after its `finally` blocks (processes stopped, rows deleted). */
export function interruptible(): AbortSignal {
  const ac = new AbortController();
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      console.error(`\n${sig}: stopping and cleaning up…`);
      ac.abort(new Error(`interrupted by ${sig}`));
    });
  }
  return ac.signal;
}
