import fs from 'node:fs';
import os from 'node:os';

/**
 * Background work on a thread of the server (an import, the inspection of uploads): on Linux the
 * calling thread takes a nice value of its own (IMPORT_THREAD_NICE), lower in priority than the
 * server's own thread, so that requests get a core first and the background work takes whatever
 * they leave. Elsewhere, or where it is not allowed, nothing changes.
 */
export function lowerThisThreadsPriority(nice: number): void {
  if (nice <= 0) return;
  try {
    const tid = Number(fs.readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) os.setPriority(tid, nice);
  } catch {
    // Not Linux, or not permitted: the thread keeps the process's priority.
  }
}
