import { exitOnStartFailure, runWorker } from '../src/main-worker';

/**
 * The crash tests' worker: `npm run worker` exactly, except that it SIGKILLs itself right after
 * committing chunk number `process.argv[2]` (0-based), before it reports that chunk's progress.
 * Started by test/processes.ts as `startScript('worker', env, { entry: CRASH_WORKER, entryArgs: [n] })`.
 */
const killAfter = Number(process.argv[2]);
if (!Number.isInteger(killAfter)) exitOnStartFailure(new Error('usage: crash-worker.ts <chunk number>'));
runWorker({
  afterChunkCommit: (n) => {
    if (n === killAfter) process.kill(process.pid, 'SIGKILL');
  },
}).catch(exitOnStartFailure);
