/**
 * The order of an import's chunk writes: at most `writers` at a time, each started in file order
 * once the one `writers` places before it has settled, so that the reader, which is asked for the
 * next chunk only then, stays at most one chunk ahead (memory stays flat whatever the file's size).
 * A chunk is started once the one after it is read (or the file has ended), so that its write can
 * look that one's documents up beside it. What a chunk's write needs of the ones before it (their
 * persons, whether it must wait for them) it gets from `earlier`: the chunks still in flight, or
 * just settled, when it starts.
 */

/** A chunk whose write has started, and its outcome. */
export type Started<C, R> = { chunk: C; done: Promise<R> };

export type ChunkWrite<C, R> = (chunk: C, next: C | undefined, earlier: readonly Started<C, R>[]) => Promise<R>;

/**
 * Runs `write` on every chunk of `chunks` as above and yields the outcomes in file order. A
 * consumer that stops early (returns from its loop) stops the reading; every write started is
 * awaited before this settles, whatever happened, so that no transaction outlives the import's run.
 */
export async function* writeChunks<C, R>(chunks: AsyncIterable<C>, writers: number, write: ChunkWrite<C, R>): AsyncGenerator<R> {
  const window: Started<C, R>[] = [];
  try {
    let waiting: C | undefined;
    for await (const chunk of chunks) {
      if (waiting !== undefined) yield* start(window, writers, write, waiting, chunk);
      waiting = chunk;
    }
    if (waiting !== undefined) yield* start(window, writers, write, waiting, undefined);
    while (window.length > 0) yield await window.shift()!.done;
  } finally {
    await Promise.allSettled(window.map((s) => s.done));
  }
}

/** Waits for the chunk `writers` places before `chunk` (yielding its outcome), then starts `chunk`. */
async function* start<C, R>(
  window: Started<C, R>[],
  writers: number,
  write: ChunkWrite<C, R>,
  chunk: C,
  next: C | undefined,
): AsyncGenerator<R> {
  const full = window.length >= writers;
  if (full) yield await window[0]!.done;
  // The one just settled too: its persons, and the look-up it made for `chunk`, are needed.
  const earlier = window.slice();
  if (full) window.shift();
  const done = write(chunk, next, earlier);
  // Awaited in turn (or by the final settling); this only keeps it from counting as unhandled meanwhile.
  done.catch(() => {});
  window.push({ chunk, done });
}
