import { exitOnStartFailure, runWorker } from '../src/main-worker';

/**
 * The crash tests' worker: `npm run worker` exactly, except that it SIGKILLs itself right after
 * committing chunk number `process.argv[2]` (0-based; -1: never), before it reports that chunk's progress.
 * With `process.argv[3]`, the chunk of that number is held open in its transaction, before its
 * write, until the kill: chunks after it commit while it never does (IMPORT_WRITERS > 1).
 * Started by test/processes.ts as `startScript('worker', env, { entry: CRASH_WORKER, entryArgs: [n, held] })`.
 */
const killAfter = Number(process.argv[2]);
const held = process.argv[3] === undefined ? undefined : Number(process.argv[3]);
if (!Number.isInteger(killAfter) || (held !== undefined && !Number.isInteger(held)))
  exitOnStartFailure(new Error('usage: crash-worker.ts <chunk number> [<held chunk number>]'));
runWorker({
  afterChunkCommit: (n) => {
    if (n === killAfter) process.kill(process.pid, 'SIGKILL');
  },
  ...(held === undefined ? {} : { beforeChunkWrite: (n: number) => (n === held ? new Promise<void>(() => {}) : Promise.resolve()) }),
}).catch(exitOnStartFailure);
