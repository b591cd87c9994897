// The upload inspection thread's entry (see upload-inspection.ts). Node 20 does not carry the
// process's `--import tsx` hooks into a worker thread, so the thread registers them itself before
// it loads its TypeScript body. Plain JavaScript, like import-thread-entry.mjs.
import { register } from 'tsx/esm/api';

register();
await import('./upload-inspection-main.ts');
