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
    // A fresh process: the flag is the process's own and is not to leak into the test runner. An
    // object reachable only through a WeakRef is gone after a full collection, whatever else the
    // heap holds (a WeakRef keeps its target for the rest of the job that made or read it: hence
    // the timer); one still held stays.
    const script = `
      import { Worker } from 'node:worker_threads';
      import { exposeGc } from './src/workers/heap-trim.ts';
      const gc = exposeGc();
      const held = { garbage: false };
      const refs = { dropped: new WeakRef({ garbage: true }), held: new WeakRef(held) };
      setTimeout(() => {
        gc();
        const alive = { dropped: refs.dropped.deref() !== undefined, held: refs.held.deref() === held };
        const w = new Worker('import("node:worker_threads").then((m) => m.parentPort.postMessage(typeof globalThis.gc))', { eval: true });
        w.once('message', (t) => { console.log(JSON.stringify({ alive, thread: t })); w.terminate(); });
      }, 0);
    `;
    const out = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: root, encoding: 'utf8' });
    expect(out.stderr).toBe('');
    expect(JSON.parse(out.stdout)).toEqual({ alive: { dropped: false, held: true }, thread: 'function' });
  });
});
