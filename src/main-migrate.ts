import { loadConfig } from './config';
import { openDb } from './db/db';
import { migrate } from './db/migrate';

const config = loadConfig();
const db = await openDb(
  config.databaseUrl ? { kind: 'postgres', url: config.databaseUrl, poolSize: 1 } : { kind: 'pglite', dataDir: `${config.dataDir}/pgdata` },
).catch((err: Error) => {
  console.error(err.message);
  process.exit(1);
});
try {
  const applied = await migrate(db);
  console.log(applied.length ? `Applied: ${applied.join(', ')}` : 'Database is up to date.');
} finally {
  await db.close();
}
