import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';

import postgres from 'postgres';
import lockfile from 'proper-lockfile';

export type QueryOptions = {
  /**
   * Run the statement with PostgreSQL's generic plan, made once per connection: for a statement
   * on a request's path whose parameters are arrays (one element per row). PostgreSQL would plan
   * it again at every run, because its generic estimate (a hundred elements an array) looks dearer
   * than a plan for the few actually sent, and planning a statement of many CTEs costs more than
   * running it. Not for a statement whose best plan depends on a value (a LIKE prefix, say).
   * Outside a transaction on PostgreSQL only; elsewhere it changes nothing (PGlite plans every
   * statement anyway).
   */
  genericPlan?: boolean;
};

export interface Queryable {
  query<T = Record<string, unknown>>(text: string, params?: readonly unknown[], options?: QueryOptions): Promise<T[]>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(script: string): Promise<void>;
}

export interface Db extends Queryable {
  readonly kind: 'pglite' | 'postgres';
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
  /**
   * Pool use for metrics: connections (`size`), those taken by a statement or a transaction
   * (`inUse`), and callers waiting for one (`waiting`).
   */
  poolStats(): { size: number; inUse: number; waiting: number };
  /**
   * The embedded database only (undefined on PostgreSQL): runs `work` while no statement runs,
   * after a CHECKPOINT, so that the files of its folder are the whole database as of this moment
   * and stay so until `work` ends (a consistent copy; src/db/embedded-backup.ts). Every statement
   * and transaction sent meanwhile waits its turn.
   */
  readonly whileIdle?: <T>(work: () => Promise<T>) => Promise<T>;
}

/** Counts the statements and transactions holding a connection (one each) at this moment. */
function poolCounter(size: number) {
  let active = 0;
  return {
    async track<T>(work: () => Promise<T>): Promise<T> {
      active++;
      try {
        return await work();
      } finally {
        active--;
      }
    },
    stats: () => ({ size, inUse: Math.min(active, size), waiting: Math.max(0, active - size) }),
  };
}

/** Dates stay `YYYY-MM-DD` strings end to end: a Date would shift a day with a time zone. */
const DATE_OID = 1082;

export type DbOptions =
  | {
      kind: 'postgres';
      url: string;
      poolSize: number;
      searchPath?: string;
      /** Seen in pg_stat_activity; default claims-registry. */
      applicationName?: string;
      /** Every transaction read-only (the search replica's pool: a wrong URL cannot write). */
      readOnly?: boolean;
      /** Seconds to wait for a new connection; the driver's default is 30. */
      connectTimeoutSeconds?: number;
      /**
       * 'transaction': the URL is a pooler in transaction mode (PgBouncer's pool_mode =
       * transaction), where each transaction may run on another server connection: no prepared
       * statements, and no session settings but the pooler's own (TimeZone, application_name).
       */
      pooler?: 'transaction';
    }
  | {
      kind: 'pglite';
      dataDir: string | undefined;
      /** Compile PGlite's PostgreSQL fully optimized at start (see startPgliteThread): for a server, not a one-off command. */
      optimizedCode?: boolean;
    };

export class DatabaseLockedError extends Error {}

export async function openDb(options: DbOptions): Promise<Db> {
  return options.kind === 'postgres' ? openPostgres(options) : openPglite(options.dataDir, options.optimizedCode ?? false);
}

function openPostgres(options: Extract<DbOptions, { kind: 'postgres' }>): Db {
  const { url, poolSize, searchPath } = options;
  const pooled = options.pooler === 'transaction';
  const prepare = !pooled;
  const connect = (settings: Record<string, string>) =>
    postgres(url, {
      max: poolSize,
      prepare,
      onnotice: () => {},
      // The wait before the next host or the next try after failed connections: the driver's own
      // grows to 20 s, and a request waiting for a connection waited that long while a failover
      // left no primary; here at most 1 s, so that it is answered 503 at once and retried.
      backoff: (failures: number) => Math.min(0.05 * 2 ** failures, 1),
      ...(options.connectTimeoutSeconds ? { connect_timeout: options.connectTimeoutSeconds } : {}),
      // jit off: the service's statements are short, and the few whose estimated cost crosses the
      // JIT threshold (an import chunk's document look-up) spend more time compiling than they save.
      // Behind a pooler in transaction mode only the settings it keeps per client (TimeZone,
      // application_name) are sent: it refuses the others (docs/operations.md#pgbouncer).
      connection: pooled
        ? { TimeZone: 'UTC', application_name: options.applicationName ?? 'claims-registry' }
        : {
            TimeZone: 'UTC',
            application_name: options.applicationName ?? 'claims-registry',
            jit: 'off',
            ...(searchPath ? { search_path: searchPath } : {}),
            ...(options.readOnly ? { default_transaction_read_only: true } : {}),
            ...settings,
          },
      types: { date: { to: DATE_OID, from: [DATE_OID], serialize: (v: string) => v, parse: (v: string) => v } },
    });
  const sql = connect({});
  // The statements that ask for it (QueryOptions.genericPlan) run on connections of their own,
  // opened when first needed, whose sessions always take the generic plan (not behind a pooler in
  // transaction mode, where a session setting does not stay: they take the usual connections).
  const genericSql = pooled ? sql : connect({ plan_cache_mode: 'force_generic_plan' });
  const wrap = (q: postgres.Sql | postgres.TransactionSql): Queryable => ({
    async query<T>(text: string, params: readonly unknown[] = []) {
      return (await q.unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare })) as unknown as T[];
    },
    async exec(script: string) {
      // Without parameters the driver uses the simple protocol, which accepts several statements.
      await q.unsafe(script);
    },
  });
  const root = wrap(sql);
  const genericRoot = wrap(genericSql);
  const pool = poolCounter(poolSize);
  const genericPool = pooled ? pool : poolCounter(poolSize);
  return {
    kind: 'postgres',
    query: (text, params, queryOptions) =>
      queryOptions?.genericPlan ? genericPool.track(() => genericRoot.query(text, params)) : pool.track(() => root.query(text, params)),
    exec: (script) => pool.track(() => root.exec(script)),
    async transaction<T>(fn: (tx: Queryable) => Promise<T>) {
      return pool.track(async () => (await sql.begin((tx) => fn(wrap(tx)))) as T);
    },
    close: once(async () => {
      await Promise.all([sql.end({ timeout: 5 }), ...(pooled ? [] : [genericSql.end({ timeout: 5 })])]);
    }),
    poolStats: () => {
      const [a, b] = [pool.stats(), genericPool.stats()];
      if (pooled) return a;
      return { size: a.size + b.size, inUse: a.inUse + b.inUse, waiting: a.waiting + b.waiting };
    },
  };
}

/** Whether a process with this id runs on this machine (EPERM: it does, as another user). */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The lock's files inside the embedded database's folder: no part of the database (a backup leaves them out). */
export const LOCK_FILES = Object.freeze({ lock: 'in-use.lock', pid: 'in-use.pid' });

/**
 * Locks the embedded database's folder for this process. The lock (proper-lockfile, refreshed
 * every 5 s, stale after 15 s) is a directory; beside it `in-use.pid` names the holder. A lock
 * whose holder is dead (a SIGKILLed server), or names this very process's id (a container
 * restarted with the same PID), is taken at once instead of after 15 s. The stale lock is first
 * renamed away, which only one of several starting processes can do.
 */
export async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  fs.mkdirSync(dataDir, { recursive: true });
  const lockPath = path.join(dataDir, LOCK_FILES.lock);
  const pidFile = path.join(dataDir, LOCK_FILES.pid);
  const take = () => lockfile.lock(dataDir, { lockfilePath: lockPath, stale: 15_000, update: 5_000 });
  let release: () => Promise<void>;
  try {
    release = await take();
  } catch {
    const holder = Number.parseInt(fs.readFileSync(pidFile, { encoding: 'utf8', flag: 'a+' }).trim(), 10);
    const dead = Number.isInteger(holder) && holder > 0 && (holder === process.pid || !processAlive(holder));
    try {
      if (!dead) throw new Error('held');
      const aside = `${lockPath}.dead-${process.pid}-${Date.now()}`;
      fs.renameSync(lockPath, aside);
      fs.rmSync(aside, { recursive: true, force: true });
      release = await take();
    } catch {
      throw new DatabaseLockedError(
        `The embedded database in ${dataDir} is in use by another process (a running server?). ` +
          'Stop it first, or use PostgreSQL by setting DATABASE_URL.',
      );
    }
  }
  fs.writeFileSync(pidFile, String(process.pid));
  return async () => {
    fs.rmSync(pidFile, { force: true });
    await release();
  };
}

/**
 * PGlite's PostgreSQL runs inside this process's WebAssembly memory, which grows to its peak and is
 * never given back: PostgreSQL's default shared_buffers, sized for a server with its own memory,
 * would stay resident here; the files stay in the operating system's page cache behind a small
 * one (docs/decisions.md#embedded-database).
 */
const PGLITE_SETTINGS = ['shared_buffers=16MB'];

/**
 * By default V8 compiles PGlite's WebAssembly quickly (Liftoff), then compiles its hot functions
 * again, optimized, while they run, and keeps both. A server compiles it once, optimized, at start
 * (a slower start, less CPU and memory during an import: docs/decisions.md#embedded-database).
 * One-off commands and tests keep the quick start.
 */
const OPTIMIZED_CODE_FLAGS = '--no-liftoff';

/**
 * The database's thread allocates a statement's parameters and rows and drops them at once: a
 * young generation smaller than V8's default collects them as well, with less memory at an
 * import's peak and the same speed (docs/decisions.md#embedded-database).
 */
const THREAD_LIMITS = { maxYoungGenerationSizeMb: 8 };

/** A statement's failure as the database's thread described it: the message and PostgreSQL's fields. */
class EmbeddedDatabaseError extends Error {
  constructor(fields: { message: string } & Record<string, unknown>) {
    super(fields.message);
    Object.assign(this, fields);
    this.name = 'EmbeddedDatabaseError';
  }
}

/**
 * The embedded database runs on a thread of its own (pglite-thread.mjs): a statement runs there
 * while this thread answers other requests and parses the next chunk of an import. Statements
 * reach it in the order they are sent, one session; a transaction holds the session (others wait
 * their turn) from its BEGIN to its COMMIT or ROLLBACK.
 */
function startPgliteThread(dataDir: string | undefined, optimizedCode: boolean) {
  const v8Flags = optimizedCode ? OPTIMIZED_CODE_FLAGS : undefined;
  const thread = new Worker(new URL('./pglite-thread.mjs', import.meta.url), {
    workerData: { dataDir, settings: PGLITE_SETTINGS, v8Flags },
    resourceLimits: THREAD_LIMITS,
  });
  // Like a socket to PostgreSQL, the thread does not keep the process alive on its own: every
  // statement has written its files by the time it answers.
  thread.unref();
  const pending = new Map<number, { resolve: (rows: unknown[]) => void; reject: (err: Error) => void }>();
  let nextId = 0;
  let gone: Error | undefined;
  let opened!: () => void;
  let failed!: (err: Error) => void;
  const ready = new Promise<void>((resolve, reject) => ((opened = resolve), (failed = reject)));
  const stop = (err: Error) => {
    gone ??= err;
    failed(err);
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };
  thread.on(
    'message',
    (msg: { ready?: true; failed?: { message: string }; id?: number; rows?: unknown[]; error?: { message: string } }) => {
      if (msg.ready) return opened();
      if (msg.failed) return stop(new EmbeddedDatabaseError(msg.failed));
      const call = pending.get(msg.id!);
      pending.delete(msg.id!);
      if (msg.error) call?.reject(new EmbeddedDatabaseError(msg.error));
      else call?.resolve(msg.rows!);
    },
  );
  thread.on('error', (err) => stop(err));
  thread.on('exit', () => stop(new Error('The embedded database has stopped.')));
  const send = (op: 'query' | 'exec' | 'close', text?: string, params?: readonly unknown[]) =>
    new Promise<unknown[]>((resolve, reject) => {
      if (gone) return reject(gone);
      const id = nextId++;
      pending.set(id, { resolve, reject });
      thread.postMessage({ id, op, text, params });
    });
  return { ready, send, terminate: () => thread.terminate() };
}

/**
 * PGlite is single-process: two processes on one folder corrupt it. The folder is locked while
 * open, and a second opener is refused with a clear message.
 */
async function openPglite(dataDir: string | undefined, optimizedCode: boolean): Promise<Db> {
  let release: (() => Promise<void>) | undefined;
  if (dataDir) release = await lockDataDir(dataDir);
  const { ready, send, terminate } = startPgliteThread(dataDir, optimizedCode);
  try {
    await ready;
  } catch (err) {
    await terminate();
    await release?.();
    throw err;
  }
  const session: Queryable = {
    async query<T>(text: string, params: readonly unknown[] = []) {
      return (await send('query', text, params)) as T[];
    },
    async exec(script: string) {
      await send('exec', script);
    },
  };
  // One session: a transaction takes it whole, and a statement outside waits for its end.
  let turn: Promise<unknown> = Promise.resolve();
  const inTurn = <T>(work: () => Promise<T>): Promise<T> => {
    const run = turn.then(work);
    turn = run.catch(() => {});
    return run;
  };
  const pool = poolCounter(1);
  return {
    kind: 'pglite',
    query: (text, params) => pool.track(() => inTurn(() => session.query(text, params))),
    exec: (script) => pool.track(() => inTurn(() => session.exec(script))),
    transaction: (fn) =>
      pool.track(() =>
        inTurn(async () => {
          // BEGIN goes out with the transaction's first statements, not a round trip ahead of
          // them (the thread runs them in order). Nothing can run outside the transaction: BEGIN
          // fails only in a session that is gone or inside an aborted transaction, and there the
          // statements behind it fail too.
          const begun = session.exec('BEGIN');
          begun.catch(() => {});
          try {
            const result = await fn(session);
            await begun;
            await session.exec('COMMIT');
            return result;
          } catch (err) {
            await session.exec('ROLLBACK').catch(() => {});
            throw err;
          }
        }),
      ),
    poolStats: pool.stats,
    // Taken in turn, as a transaction is: between two transactions, never inside one. The
    // CHECKPOINT writes every changed page and the WAL to the files, which nothing changes until
    // `work` ends (PGlite writes only while a statement runs).
    whileIdle: (work) =>
      pool.track(() =>
        inTurn(async () => {
          await session.exec('CHECKPOINT');
          return work();
        }),
      ),
    close: once(async () => {
      await inTurn(() => send('close')).catch(() => {});
      await terminate();
      await release?.();
    }),
  };
}

/** The Postgres error code of a failed statement, if any (both drivers expose `code`). */
export function pgErrorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * Driver and network codes of a connection that was lost or could not be made: the socket was
 * reset or closed, nothing listens, the server is shutting down or restarting, or refuses more
 * connections. Such a failure is the database being unavailable, not a bug of the request.
 */
const CONNECTION_FAULTS = new Set([
  // postgres (the driver)
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  // the network
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  // PostgreSQL: admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);

/**
 * PostgreSQL's read_only_sql_transaction ("cannot execute INSERT in a read-only transaction"): a
 * write reached a server that takes none, a standby. With a multi-host DATABASE_URL and
 * target_session_attrs=read-write the driver connects only to a primary, but a connection made
 * just before a failover, or to the old primary while it is being demoted, can still meet one:
 * during a failover there is no primary for a while, which is the database being unavailable too.
 */
const NO_PRIMARY = '25006';

/** Seconds a client is asked to wait after the database was unreachable (API and dashboard). */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

/**
 * True when `err` says the database connection was lost or refused (PostgreSQL class 08 included),
 * or that a write met a standby while there is no primary (a failover).
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const code = pgErrorCode(err);
  if (code === undefined) return false;
  return CONNECTION_FAULTS.has(code) || code === NO_PRIMARY || /^08[0-9A-Z]{3}$/u.test(code);
}

/** Closing twice (an onClose hook and a shutdown handler, say) is harmless. */
function once(fn: () => Promise<void>): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => (closing ??= fn());
}

/**
 * Where a write failed because a disk is full, or undefined when it did not: PostgreSQL's
 * disk_full (SQLSTATE 53100, "could not extend file ...: No space left on device"; PGlite reports
 * the same of its files in DATA_DIR), or the operating system's ENOSPC / EDQUOT of a file the
 * process writes itself (an upload kept in DATA_DIR/imports). A known, recoverable condition: the
 * write is refused and works again once space is freed.
 */
export function diskFullWhere(err: unknown): 'database' | 'storage' | undefined {
  const code = pgErrorCode(err);
  const message = (err as { message?: unknown } | null)?.message;
  if (code === '53100' || (typeof message === 'string' && /could not (extend|write to) file/u.test(message) && /space/u.test(message))) {
    return 'database';
  }
  if (code === 'ENOSPC' || code === 'EDQUOT') return 'storage';
  const cause = (err as { cause?: unknown } | null)?.cause;
  return cause !== undefined && cause !== err ? diskFullWhere(cause) : undefined;
}
export const isDiskFull = (err: unknown): boolean => diskFullWhere(err) !== undefined;
