import closeWithGrace from 'close-with-grace';

import { buildApp } from './api/app';
import { ConfigError, loadConfig } from './config';
import { DatabaseLockedError } from './db/db';
import { createDeps, StartupError } from './deps';
import { startRetentionSchedule } from './domain/registry/retention-schedule';
import { createLogger } from './logger';

async function main() {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  const deps = await createDeps(config, { optimizedEmbeddedCode: true, importThread: true });
  const app = await buildApp(deps, { logger });
  app.addHook('onClose', async () => deps.close());
  closeWithGrace({ delay: 20_000 }, async ({ err, signal }) => {
    if (err) logger.error({ err }, 'closing after an error');
    else logger.info({ signal }, 'closing');
    await app.close();
  });
  await app.listen({ port: config.port, host: config.host });
  // Without REDIS_URL there are no separate workers: this server runs the daily retention purge.
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
