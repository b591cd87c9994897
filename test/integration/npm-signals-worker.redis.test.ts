import { randomBytes } from 'node:crypto';

import { describe, it } from 'vitest';

import { removeQueueKeys } from '../processes';
import { serverEnv, startNpm, stopThroughNpm } from './npm-run';

/** `npm run worker` under a supervisor that signals npm: the worker stops too, cleanly, and nothing is left. */
describe('signals sent to npm', () => {
  const redisUrl = process.env.TEST_REDIS_URL!;
  it('SIGTERM to npm run worker stops the worker: npm exits 0, no process is left', async () => {
    const { env, cleanUp } = await serverEnv();
    const prefix = `test-npm-${randomBytes(4).toString('hex')}`;
    try {
      const run = await startNpm(['run', 'worker'], { ...env, REDIS_URL: redisUrl, QUEUE_PREFIX: prefix }, 'import worker ready');
      await stopThroughNpm(run, 'SIGTERM');
    } finally {
      await cleanUp();
      await removeQueueKeys(redisUrl, prefix);
    }
  }, 120_000);
});
