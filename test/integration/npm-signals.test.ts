import { describe, expect, it } from 'vitest';

import { freePort } from '../processes';
import { portOpen, serverEnv, startNpm, stopThroughNpm } from './npm-run';

/**
 * `npm start` under a supervisor that signals the process it started (npm's): SIGTERM or SIGINT to
 * npm stops node too, cleanly (exit 0), and leaves nothing running. `npm run worker`:
 * npm-signals-worker.redis.test.ts.
 */
describe('signals sent to npm', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal} to npm start stops the server: npm exits 0, no process is left, the port is closed`, async () => {
      const { env, cleanUp } = await serverEnv();
      try {
        const port = await freePort();
        const run = await startNpm(['start'], { ...env, PORT: String(port) }, 'claims registry ready');
        expect(await portOpen(port)).toBe(true);
        await stopThroughNpm(run, signal, port);
      } finally {
        await cleanUp();
      }
    }, 120_000);
  }
});
