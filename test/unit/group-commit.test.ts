import { describe, expect, it } from 'vitest';

import { createGroupCommit } from '../../src/domain/group-commit';

/**
 * Group commit as the plate searches use it: each item gets its own result once its batch has
 * run; items that arrive while every lane is busy run together next; a failed batch fails its
 * items (never answers them) and the next batch goes on.
 */

/** A run the test completes by hand: `runs` are the batches asked for. */
function manualRun() {
  const runs: { items: number[]; finish: (results: string[]) => void; fail: (err: Error) => void }[] = [];
  const run = (items: number[]) =>
    new Promise<string[]>((resolve, reject) => {
      runs.push({ items, finish: resolve, fail: reject });
    });
  return { run, runs };
}
const turn = () => new Promise((r) => setImmediate(r));
const refused = (cause?: unknown) => new Error(cause === undefined ? 'refused' : `failed: ${(cause as Error).message}`);

function track<T>(p: Promise<T>) {
  const t: { state: unknown } = { state: 'pending' };
  p.then(
    (v) => (t.state = v),
    (err: unknown) => (t.state = (err as Error).message),
  );
  return t;
}

describe('group commit', () => {
  it('runs a lone item at once and gives it its own result only when its batch has run', async () => {
    const { run, runs } = manualRun();
    const gc = createGroupCommit({ run, failed: refused });
    const a = track(gc.submit(1));
    await turn();
    expect(runs.map((r) => r.items)).toEqual([[1]]);
    expect(a.state).toBe('pending');
    runs[0]!.finish(['one']);
    await turn();
    expect(a.state).toBe('one');
  });

  it('runs the items that arrive while the lane is busy together, in order, each answered with its own result', async () => {
    const { run, runs } = manualRun();
    const gc = createGroupCommit({ run, failed: refused });
    const first = track(gc.submit(1));
    const rest = [2, 3, 4].map((n) => track(gc.submit(n)));
    await turn();
    expect(runs.map((r) => r.items)).toEqual([[1]]);
    runs[0]!.finish(['r1']);
    await turn();
    expect(runs.map((r) => r.items)).toEqual([[1], [2, 3, 4]]);
    expect(rest.map((t) => t.state)).toEqual(['pending', 'pending', 'pending']);
    runs[1]!.finish(['r2', 'r3', 'r4']);
    await turn();
    expect([first, ...rest].map((t) => t.state)).toEqual(['r1', 'r2', 'r3', 'r4']);
  });

  it('with two lanes, runs an item at once while another batch is in flight', async () => {
    const { run, runs } = manualRun();
    const gc = createGroupCommit({ run, lanes: 2, failed: refused });
    gc.submit(1).catch(() => {});
    await turn();
    gc.submit(2).catch(() => {});
    await turn();
    expect(runs.map((r) => r.items)).toEqual([[1], [2]]);
  });

  it('fails every item of a batch that could not run with failed(cause), and runs the next batch', async () => {
    const { run, runs } = manualRun();
    const told: unknown[] = [];
    const gc = createGroupCommit({ run, failed: refused, onError: (err) => told.push(err) });
    const a = track(gc.submit(1));
    const b = track(gc.submit(2));
    const c = track(gc.submit(3));
    await turn();
    runs[0]!.fail(new Error('disk full'));
    await turn();
    expect(a.state).toBe('failed: disk full');
    expect(told).toHaveLength(1);
    expect(runs.map((r) => r.items)).toEqual([[1], [2, 3]]);
    runs[1]!.finish(['r2', 'r3']);
    await turn();
    expect([b.state, c.state]).toEqual(['r2', 'r3']);
  });

  it('refuses an item at once while maxBacklog items wait or run', async () => {
    const { run, runs } = manualRun();
    const gc = createGroupCommit({ run, maxBacklog: 2, failed: refused });
    track(gc.submit(1));
    track(gc.submit(2));
    const third = track(gc.submit(3));
    await turn();
    expect(third.state).toBe('refused');
    runs[0]!.finish(['r1']);
    await turn();
    expect(track(gc.submit(4)).state).toBe('pending');
  });

  it('flush waits for what was submitted before it, not for what comes after', async () => {
    const { run, runs } = manualRun();
    const gc = createGroupCommit({ run, failed: refused });
    track(gc.submit(1));
    track(gc.submit(2));
    const flushed = track(gc.flush().then(() => 'flushed'));
    await turn();
    runs[0]!.finish(['r1']);
    await turn();
    track(gc.submit(3));
    expect(flushed.state).toBe('pending');
    runs[1]!.finish(['r2']);
    await turn();
    expect(flushed.state).toBe('flushed');
    expect(runs.map((r) => r.items)).toEqual([[1], [2], [3]]);
  });
});
