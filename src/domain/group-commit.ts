/**
 * Group commit: work that must be committed before it is answered, run in batches. At most
 * `lanes` batches run at a time; items that arrive while every lane is busy wait together and go
 * as the next batch, in one call of `run`. Under load one call carries many items, and a lone item
 * waits for one short call. There is no timer.
 *
 * `run` gets the batch's items in arrival order (at most `maxBatch` at a call: a larger batch is
 * run as several calls, in order) and resolves with one result per item, in the
 * same order, once they are committed. If it rejects, every item of that batch rejects with
 * `failed(cause)` (and `onError` is told the cause); the next batch goes on. An item that arrives
 * while `maxBacklog` items wait or run is refused at once with `failed()`.
 */

export type GroupCommitOptions<I, R> = {
  run: (items: I[]) => Promise<R[]>;
  lanes?: number;
  maxBatch?: number;
  maxBacklog?: number;
  /** The error every item of a failed batch (`cause`: why) or a refused item rejects with. */
  failed: (cause?: unknown) => Error;
  onError?: (err: unknown) => void;
};

type Batch<I, R> = {
  items: I[];
  resolve: ((r: R) => void)[];
  reject: ((e: unknown) => void)[];
  /** Settles (never rejects) once the batch has been committed or has failed. */
  settled: Promise<void>;
  settle: () => void;
};

function newBatch<I, R>(): Batch<I, R> {
  let settle!: () => void;
  const settled = new Promise<void>((resolve) => (settle = resolve));
  return { items: [], resolve: [], reject: [], settled, settle };
}

/** Runs `run` on consecutive slices of at most `size` items, in order, and joins the results. */
async function inSlices<I, R>(items: I[], size: number, run: (slice: I[]) => Promise<R[]>): Promise<R[]> {
  if (items.length <= size) return run(items);
  const out: R[] = [];
  for (let from = 0; from < items.length; from += size) out.push(...(await run(items.slice(from, from + size))));
  return out;
}

export function createGroupCommit<I, R>({
  run,
  lanes = 1,
  maxBatch = Infinity,
  maxBacklog = 50_000,
  failed,
  onError,
}: GroupCommitOptions<I, R>) {
  /** The items waiting for a lane. */
  let next: Batch<I, R> | undefined;
  /** Items waiting or running. */
  let pending = 0;
  let working = 0;
  /** The batches being run. */
  const inFlight = new Set<Batch<I, R>>();

  async function lane(): Promise<void> {
    working++;
    while (next !== undefined) {
      const batch = next;
      next = undefined;
      inFlight.add(batch);
      try {
        const results = await inSlices(batch.items, maxBatch, run);
        for (let i = 0; i < batch.items.length; i++) batch.resolve[i]!(results[i]!);
      } catch (err) {
        onError?.(err);
        const e = failed(err);
        for (const reject of batch.reject) reject(e);
      }
      pending -= batch.items.length;
      inFlight.delete(batch);
      batch.settle();
    }
    working--;
  }

  /** Resolves with the item's result once its batch is committed; rejects with `failed()` if it was not. */
  function submit(item: I): Promise<R> {
    if (pending >= maxBacklog) return Promise.reject(failed());
    pending++;
    const batch = (next ??= newBatch());
    const done = new Promise<R>((resolve, reject) => {
      batch.items.push(item);
      batch.resolve.push(resolve);
      batch.reject.push(reject);
    });
    if (working < lanes) void lane();
    return done;
  }

  /** Resolves when everything submitted so far has been committed or has failed. */
  function flush(): Promise<void> {
    const batches = [...inFlight, ...(next ? [next] : [])];
    return Promise.all(batches.map((b) => b.settled)).then(() => {});
  }

  return { submit, flush, waiting: () => pending };
}
export type GroupCommit<I, R> = ReturnType<typeof createGroupCommit<I, R>>;
