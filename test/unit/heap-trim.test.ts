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
