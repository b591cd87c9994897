import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * Heap growth between two full collections in a process or thread that only runs imports
 * (`npm run worker`, the server's import thread). What an import holds is small (a chunk), so
 * the growth allowed between collections is most of the heap's peak: a smaller one lowers the
 * worker's peak, for collections more often while the chunks' writes are in the database
 * (docs/performance.md).
 */
export const IMPORT_WORKER_HEAP_GROWTH_BYTES = 16 * 1024 * 1024;

/**
 * Keeps an import worker's heap close to what it holds. An import allocates a chunk's rows,
 * validated claims and statement parameters over and over; they live across the chunk's round
 * trips, long enough for V8 to move them to the old generation, which V8 lets grow to about four
 * times what was live at its last full collection before it collects again (on a machine with a
 * lot of memory), so a worker's peak was several times what it held. Given V8's `gc` (the
 * `--expose-gc` flag, or exposeGc), a full collection runs once the heap has grown by
 * `growthBytes` since the last one (a short pause every few seconds of an import),
 * while a chunk's write is in the database and this thread only waits for it (between two chunks,
 * the database would wait for the collection). Without `gc` this does nothing.
 */
export function createHeapTrim(growthBytes: number, gc = (globalThis as { gc?: () => void }).gc): () => void {
  if (typeof gc !== 'function') return () => {};
  let floor = getHeapStatistics().used_heap_size;
  return () => {
    if (getHeapStatistics().used_heap_size < floor + growthBytes) return;
    gc();
    floor = getHeapStatistics().used_heap_size;
  };
}

/**
 * V8's full collection for a process started without `--expose-gc` (the server as npm start, the
 * container and anyone's own command start it; a worker started by a command of its own): the
 * flag set at run time, and `gc` read from a new context. Threads started after this have `gc`
 * on their global, as with the flag.
 */
export function exposeGc(): Gc {
  const existing = (globalThis as { gc?: Gc }).gc;
  if (typeof existing === 'function') return existing;
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as Gc;
}

/** V8's `gc`: a full collection, or with `{ type: 'minor' }` a collection of the young generation only. */
export type Gc = (options?: { type: 'minor' | 'major' }) => void;
