import path from 'node:path';

import type { Config } from './config';
import { openDb, type Db } from './db/db';
import { migrate } from './db/migrate';
import { createRepositories } from './db/repositories';
import { createDeps, systemClock, type Deps, type DepsOptions } from './deps';
import { keyFingerprint } from './domain/clients/identity';
import { resolveDocumentHashKey, StartupError } from './secrets';
import { createObjectStore } from './storage/object-store';

// What a process does before and after it builds its objects (deps.ts builds them only): the
// main files call openDeps (the database opened and prepared, then createDeps), then the start
// functions.

/**
 * The process's database: DATABASE_URL's pool (in DB_SEARCH_PATH's schema when set), else the
 * embedded one in DATA_DIR. `optimizedEmbeddedCode`: a long-running server compiles the embedded
 * database's code optimized once, at start.
 */
export function openDatabase(config: Config, opts: { optimizedEmbeddedCode?: boolean } = {}): Promise<Db> {
  return openDb(
    config.databaseUrl
      ? {
          kind: 'postgres',
          url: config.databaseUrl,
          poolSize: config.dbPoolSize,
          ...(config.dbSearchPath ? { searchPath: config.dbSearchPath } : {}),
          ...(config.databasePooler ? { pooler: config.databasePooler } : {}),
        }
      : { kind: 'pglite', dataDir: path.join(config.dataDir, 'pgdata'), optimizedCode: opts.optimizedEmbeddedCode ?? false },
  );
}

/**
 * Brings the database's schema up to date and records the identity documents' key's fingerprint
 * the first time. A process started with another key would silently stop matching anyone: it
 * refuses to start instead.
 */
export async function prepareDatabase(db: Db, documentHashKey: string): Promise<void> {
  await migrate(db);
  const fingerprint = keyFingerprint(documentHashKey);
  const stored = await createRepositories(db).meta.setOnce('document_hash_key_fingerprint', fingerprint);
  if (stored !== fingerprint) {
    throw new StartupError('DOCUMENT_HASH_KEY does not match the key this database was created with; refusing to start.');
  }
}

/**
 * DOCUMENT_HASH_KEY (embedded mode generates one into DATA_DIR the first time), then the database
 * opened and prepared; closed again if it cannot be prepared. What createDeps takes as `db` and
 * `documentHashKey`.
 */
export async function openPreparedDatabase(
  config: Config,
  opts: { optimizedEmbeddedCode?: boolean } = {},
): Promise<{ db: Db; documentHashKey: string }> {
  const documentHashKey = resolveDocumentHashKey(config);
  const db = await openDatabase(config, opts);
  try {
    await prepareDatabase(db, documentHashKey);
  } catch (err) {
    await db.close();
    throw err;
  }
  return { db, documentHashKey };
}

/**
 * A process's objects on its database, opened and prepared (openPreparedDatabase), with the real
 * clock and the configured object store.
 */
export async function openDeps(
  config: Config,
  opts: Pick<DepsOptions, 'logger' | 'chunkHooks'> & { optimizedEmbeddedCode?: boolean } = {},
): Promise<Deps> {
  const { optimizedEmbeddedCode, ...rest } = opts;
  const opened = await openPreparedDatabase(config, optimizedEmbeddedCode ? { optimizedEmbeddedCode } : {});
  return createDeps(config, { ...opened, clock: systemClock(config), storage: createObjectStore(config), ...rest });
}

/**
 * A server without REDIS_URL runs the background work itself: the import and batch look-up jobs
 * (with `thread` and PostgreSQL, imports on a thread of their own) and the webhook outbox's
 * delivery. With REDIS_URL, `npm run worker` does.
 */
export function startBackground(deps: Deps, opts: { thread?: boolean } = {}): void {
  deps.startJobRunners(opts);
  deps.startWebhookDelivery();
}
