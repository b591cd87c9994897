/** Runs `work` for `key` after every earlier work of the same key has settled. */
export type Turns = <T>(key: string, work: () => Promise<T>) => Promise<T>;

/**
 * Work of one key done one at a time in this process, in the order it was asked for; other keys
 * go on beside it. A check that reads a count and then adds to it (an hourly budget, a failure
 * budget) takes its turn, so parallel calls cannot each read the same count and together pass a
 * limit that calls made one after another respect.
 */
export function createTurns(): Turns {
  const last = new Map<string, Promise<unknown>>();
  return <T>(key: string, work: () => Promise<T>): Promise<T> => {
    const turn = (last.get(key) ?? Promise.resolve()).then(work);
    const settled = turn.catch(() => {});
    last.set(key, settled);
    void settled.then(() => {
      if (last.get(key) === settled) last.delete(key);
    });
    return turn;
  };
}
