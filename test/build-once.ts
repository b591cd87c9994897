import { buildAll } from '../scripts/build';

/**
 * vitest's global set-up: builds dist/ once before any test runs, as `npm start` and
 * `npm run worker` build it before they run it, so that the tests' processes (test/processes.ts)
 * run the code that users run, built from the sources under test.
 */
export default async function setup(): Promise<void> {
  await buildAll();
}
