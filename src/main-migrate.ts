import { loadConfig } from './config';
import { migrate } from './db/migrate';
import { openDatabase } from './startup';

const config = loadConfig();
const db = await openDatabase(config).catch((err: Error) => {
  console.error(err.message);
  process.exit(1);
});
try {
  const applied = await migrate(db);
  console.log(applied.length ? `Applied: ${applied.join(', ')}` : 'Database is up to date.');
} finally {
  await db.close();
}
