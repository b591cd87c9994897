import fs from 'node:fs';

import { defineConfig } from 'vitest/config';

/**
 * Every test file runs against the embedded PGlite; when TEST_DATABASE_URL is set (CI does), the
 * files run a second time against the real PostgreSQL, each file in its own schema. A file that
 * belongs to one database says so in its name, and is in that project only (never "skipped" in the
 * other):
 *
 *   *.pglite.test.ts      the embedded database only (its lock, its one session, the admin CLI's default)
 *   *.postgres.test.ts    PostgreSQL only (pools, locks between sessions, a proxy that cuts connections)
 *   *.redis.test.ts       PostgreSQL and the Redis of TEST_REDIS_URL (BullMQ, worker processes)
 *   *.pg-restart.test.ts  restarts the PostgreSQL cluster: only with TEST_PG_RESTART=1, alone (.ci/run)
 *   *.large.test.ts       PostgreSQL and Redis, a file of hundreds of MB whose pace is compared with a small
 *                         file's: only with TEST_LARGE=1, alone (.ci/run), so that no other test shares the cores
 *   *.replica.test.ts     PostgreSQL and its streaming replica at TEST_SEARCH_DATABASE_URL (scripts/start-replica.sh)
 *   *.failover.test.ts    kills the primary of a pg_auto_failover formation (scripts/start-failover.sh): only with
 *                         TEST_FAILOVER=1, alone (.ci/run)
 *
 * The browser tests (test/browser) run in the pglite project only, and need /usr/bin/chromium. What cannot run here is left out with a
 * notice, never skipped in silence; under CI=true a missing requirement is an error instead.
 */
const ci = process.env.CI === 'true';
const postgres = Boolean(process.env.TEST_DATABASE_URL);
const redis = Boolean(process.env.TEST_REDIS_URL);
const chromium = fs.existsSync('/usr/bin/chromium');
const pgRestart = process.env.TEST_PG_RESTART === '1';
const replica = Boolean(process.env.TEST_SEARCH_DATABASE_URL);
const failover = process.env.TEST_FAILOVER === '1';
const large = process.env.TEST_LARGE === '1';

function missing(what: string, why: string): void {
  if (ci) throw new Error(`CI runs every test, but ${why}: ${what} cannot run.`);
  console.warn(`\n  Left out of this run: ${what} (${why}).\n`);
}

if (!chromium) missing('the browser tests (test/browser)', '/usr/bin/chromium is missing: apt-get install chromium');
if (postgres && !replica) {
  missing('the *.replica.test.ts files', 'TEST_SEARCH_DATABASE_URL is not set: scripts/start-replica.sh starts a replica and prints it');
}
if (postgres && !redis) missing('the *.redis.test.ts and *.pg-restart.test.ts files', 'TEST_REDIS_URL is not set');

// dist/ built before the tests, as `npm start` and `npm run worker` build it (test/build-once.ts).
const shared = { include: ['test/**/*.test.ts'], testTimeout: 30_000, hookTimeout: 60_000, globalSetup: ['test/build-once.ts'] };
const browser = chromium ? [] : ['test/browser/**'];

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          ...shared,
          name: 'pglite',
          env: { TEST_DB_KIND: 'pglite' },
          exclude: [
            '**/*.postgres.test.ts',
            '**/*.redis.test.ts',
            '**/*.pg-restart.test.ts',
            '**/*.replica.test.ts',
            '**/*.failover.test.ts',
            '**/*.large.test.ts',
            ...browser,
          ],
        },
      },
      ...(postgres
        ? [
            {
              test: {
                ...shared,
                name: 'postgres',
                env: { TEST_DB_KIND: 'postgres' },
                exclude: [
                  '**/*.pglite.test.ts',
                  'test/browser/**',
                  ...(redis ? [] : ['**/*.redis.test.ts']),
                  ...(replica ? [] : ['**/*.replica.test.ts']),
                  ...(redis && pgRestart ? [] : ['**/*.pg-restart.test.ts']),
                  ...(redis && failover ? [] : ['**/*.failover.test.ts']),
                  ...(redis && large ? [] : ['**/*.large.test.ts']),
                ],
              },
            },
          ]
        : []),
    ],
  },
});
