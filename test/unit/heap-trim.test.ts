import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterEach, describe, expect, it, vi } from 'vitest';

import { createHeapTrim } from '../../src/workers/heap-trim';

const g = globalThis as { gc?: () => void };
const original = g.gc;
afterEach(() => {
  if (original) g.gc = original;
  else delete g.gc;
});

describe('createHeapTrim', () => {
  it('collects once the heap has grown by the given amount since the last collection, and not before', () => {
    const gc = vi.fn();
    g.gc = gc;
    const never = createHeapTrim(Number.MAX_SAFE_INTEGER);
    never();
    expect(gc).not.toHaveBeenCalled();
    const always = createHeapTrim(0);
    always();
    always();
    expect(gc).toHaveBeenCalledTimes(2);
  });

  it('does nothing when the process was started without --expose-gc', () => {
    delete g.gc;
    expect(() => createHeapTrim(0)()).not.toThrow();
  });
});

describe('exposeGc', () => {
  it('gives a process started without --expose-gc a full collection, and the threads it starts afterwards too', () => {
    const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
    // A fresh process: the flag is the process's own and is not to leak into the test runner.
    const script = `
      import { getHeapStatistics } from 'node:v8';
      import { Worker } from 'node:worker_threads';
      import { exposeGc } from './src/workers/heap-trim.ts';
      const gc = exposeGc();
      let garbage = Array.from({ length: 300_000 }, (_, i) => ({ i, s: 'x' + i }));
      const before = getHeapStatistics().used_heap_size;
      garbage = null;
      gc();
      const after = getHeapStatistics().used_heap_size;
      const w = new Worker('import("node:worker_threads").then((m) => m.parentPort.postMessage(typeof globalThis.gc))', { eval: true });
      w.once('message', (t) => { console.log(JSON.stringify({ before, after, thread: t })); w.terminate(); });
    `;
    const out = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: root, encoding: 'utf8' });
    expect(out.stderr).toBe('');
    const { before, after, thread } = JSON.parse(out.stdout) as { before: number; after: number; thread: string };
    expect(after).toBeLessThan(before - 10 * 1024 * 1024);
    expect(thread).toBe('function');
  });
});
