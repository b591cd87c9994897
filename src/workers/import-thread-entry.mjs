// The import thread's entry (see import-thread.ts). Node 20 does not carry the process's
// `--import tsx` hooks into a worker thread, so the thread registers them itself before it
// loads its TypeScript body. Plain JavaScript, like pglite-thread.mjs.
import { register } from 'tsx/esm/api';

register();
await import('./import-thread-main.ts');
