import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import type { Config } from './config';
import { openDb, type Db } from './db/db';
import { migrate } from './db/migrate';
import { createStore } from './db/store';
import { createClaimService } from './domain/claims/claim-service';
import { createDocumentHasher, keyFingerprint } from './domain/clients/identity';
import { createCompanyService } from './domain/companies/company-service';
import { todayIn } from './domain/dates';
import { createTokenService } from './domain/tokens/token-service';

export class StartupError extends Error {}

/**
 * The document-hash key: DOCUMENT_HASH_KEY, or in embedded mode a key generated once into
 * DATA_DIR and reused. PostgreSQL mode requires the variable: several processes must share it.
 */
function resolveDocumentHashKey(config: Config): string {
  if (config.documentHashKey) return config.documentHashKey;
  if (config.databaseUrl) {
    throw new StartupError('DOCUMENT_HASH_KEY must be set when DATABASE_URL is set (at least 32 characters, the same for every process).');
  }
  const file = path.join(config.dataDir, 'document-hash.key');
  fs.mkdirSync(config.dataDir, { recursive: true });
  try {
    fs.writeFileSync(file, randomBytes(32).toString('base64url'), { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return fs.readFileSync(file, 'utf8').trim();
}

export type DepsOptions = {
  /** Test isolation: a PostgreSQL schema, or an in-memory PGlite (dataDir null). */
  searchPath?: string;
  inMemory?: boolean;
};

export async function createDeps(config: Config, options: DepsOptions = {}) {
  const key = resolveDocumentHashKey(config);
  const db: Db = await openDb(
    config.databaseUrl
      ? { kind: 'postgres', url: config.databaseUrl, poolSize: config.dbPoolSize, ...(options.searchPath ? { searchPath: options.searchPath } : {}) }
      : { kind: 'pglite', dataDir: options.inMemory ? undefined : path.join(config.dataDir, 'pgdata') },
  );
  try {
    await migrate(db);
    const store = createStore(db);
    // A process started with another key would silently stop matching anyone: refuse instead.
    const stored = await store.meta.setOnce('document_hash_key_fingerprint', keyFingerprint(key));
    if (stored !== keyFingerprint(key)) {
      throw new StartupError('DOCUMENT_HASH_KEY does not match the key this database was created with; refusing to start.');
    }
    const today = () => todayIn(config.timezone);
    const claims = createClaimService({ store, hashDocument: createDocumentHasher(key), today, searchHistoryYears: config.searchHistoryYears });
    return {
      config,
      db,
      store,
      today,
      claims,
      tokens: createTokenService({ store }),
      companies: createCompanyService({ store }),
      async close() {
        await db.close();
      },
    };
  } catch (err) {
    await db.close();
    throw err;
  }
}
export type Deps = Awaited<ReturnType<typeof createDeps>>;
