import closeWithGrace from 'close-with-grace';

import { buildApp } from './app';
import { startBackupChannel } from './backup-channel';
import { ConfigError, loadConfig } from './config';
import { DatabaseLockedError } from './db/db';
import { StartupError } from './deps';
import { startRetentionSchedule } from './domain/registry/retention-schedule';
import { createLogger } from './logger';
import { openDeps, startBackground } from './startup';
import { createHeapTrim, exposeGc } from './workers/heap-trim';

/**
 * Heap growth between two full collections during an import on the server's thread (embedded
 * mode; see heap-trim.ts): smaller than a worker's, since the server's thread also answers
 * requests and PGlite's memory sits beside it (docs/performance.md).
 */
const HEAP_GROWTH_BYTES = 16 * 1024 * 1024;

async function main() {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  // Before the database's and the imports' threads start, so that they have `gc` too.
  const gc = exposeGc();
  const trimHeap = createHeapTrim(HEAP_GROWTH_BYTES, gc);
  // The key (generated into DATA_DIR in embedded mode), the database migrated, the key's fingerprint checked.
  const deps = await openDeps(config, { optimizedEmbeddedCode: true, logger, chunkHooks: { whileChunkWrites: trimHeap } });
  // Without REDIS_URL there are no separate workers: this server runs the imports and batch
  // look-ups (imports with PostgreSQL on a thread of their own, started now so that the first
  // import does not wait for it), delivers the webhook outbox and runs the daily retention purge.
  // With REDIS_URL, `npm run worker` does.
  if (!config.redisUrl) startBackground(deps, { thread: true });
  const app = await buildApp(deps, { logger, youngCollection: () => gc({ type: 'minor' }) });
  // Embedded, `admin backup` asks this server for the copy (the server holds the database's folder).
  const backupChannel =
    deps.db.kind === 'pglite'
      ? await startBackupChannel(deps, config.dataDir, logger).catch((err: unknown) => {
          // A socket path too long for the system (about 100 bytes), say: the server runs, only `admin backup` cannot reach it.
          logger.warn({ err: { message: (err as Error).message } }, 'admin backup cannot ask this server for a copy');
          return undefined;
        })
      : undefined;
  app.addHook('onClose', async () => {
    await backupChannel?.close();
    await deps.close();
  });
  closeWithGrace({ delay: 20_000 }, async ({ err, signal }) => {
    if (err) logger.error({ err }, 'closing after an error');
    else logger.info({ signal }, 'closing');
    await app.close();
  });
  await app.listen({ port: config.port, host: config.host });
  if (!config.redisUrl) startRetentionSchedule(deps.registry, logger);
  logger.info(
    { database: deps.db.kind === 'pglite' ? `embedded (${config.dataDir})` : 'postgresql', docs: `http://localhost:${config.port}/docs` },
    'claims registry ready',
  );
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError || err instanceof StartupError || err instanceof DatabaseLockedError) {
    console.error(err.message);
  } else {
    console.error('Failed to start:', err);
  }
  process.exit(1);
});
