import { defineConfig } from 'vitest/config';

// Every test file runs against the embedded PGlite; when TEST_DATABASE_URL is set (CI does),
// the same files run a second time against the real PostgreSQL, each file in its own schema.
const shared = { include: ['test/**/*.test.ts'], testTimeout: 30_000, hookTimeout: 60_000 };

export default defineConfig({
  test: {
    projects: [
      { test: { ...shared, name: 'pglite', env: { TEST_DB_KIND: 'pglite' } } },
      ...(process.env.TEST_DATABASE_URL ? [{ test: { ...shared, name: 'postgres', env: { TEST_DB_KIND: 'postgres' } } }] : []),
    ],
  },
});
