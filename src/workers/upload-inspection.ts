import { Transform } from 'node:stream';
import { Worker } from 'node:worker_threads';

import type { Logger } from 'pino';

import { AppError } from '../domain/errors';
import { InvalidImportFile } from '../domain/imports/csv-file';
import type { ContentCheck } from '../domain/uploads/upload';

export type InspectionData = { nice: number };
export type InspectionRequest =
  /** The upload's memory (SLOTS slots of `slotBytes`), sent before its first chunk. */
  | { op: 'open'; id: number; memory: SharedArrayBuffer; slotBytes: number }
  /** The next bytes of the upload: `length` bytes at the start of slot `slot`. */
  | { op: 'chunk'; id: number; slot: number; length: number }
  | { op: 'end'; id: number }
  | { op: 'abort'; id: number };
export type InspectionReply =
  /** The upload's oldest slot in use may be filled again. */
  | { id: number; freed: true }
  | { id: number; dataRows: number }
  | { id: number; invalid: string[] }
  /** Anything but the file's problem (the spill file's disk full, say): its error code, if any. */
  | { id: number; fault: { code?: string } };

/**
 * Bytes of one slot of an upload's memory shared with the thread, sent in one message (but the
 * last): a message and its answer cost about as much as inspecting a few kilobytes.
 */
const SLOT_BYTES = 256 * 1024;

/**
 * The slots of an upload's memory shared with the thread, SLOT_BYTES each: the bytes on their
 * way to the thread are copied into them in turn, and the upload waits (and so its sender) while
 * every slot is in use, so that a slow inspection holds at most this much of each upload.
 */
const SLOTS = 4;

/** The most bytes of one upload on their way to the thread or being inspected there. */
export const INSPECTION_WINDOW_BYTES = SLOTS * SLOT_BYTES;

/** The inspection could not give a verdict (its thread stopped): the upload fails with a 503, nothing is stored. */
export class InspectionFault extends AppError {
  constructor() {
    super('UNAVAILABLE', 'The file could not be checked; nothing was stored. Try again.');
    this.name = 'InspectionFault';
  }
}

/**
 * A fault of the thread as the server's thread sees it: an error with the system's code (a full
 * disk is answered as one wherever it happens, src/http-conditions.ts), else InspectionFault.
 */
function faultOf(code: string | undefined): Error {
  return code ? Object.assign(new Error(`The upload inspection failed (${code}).`), { code }) : new InspectionFault();
}

type Open = {
  /** Slots sent to the thread and not yet freed by it. */
  inUse: number;
  /** The chunk waiting for a slot to be freed, if any. */
  resume?: () => void;
  fail(err: Error): void;
  settle(dataRows: number): void;
};

/**
 * The inspection of import files (src/domain/imports/csv-file.ts, `createFileInspector`) on a
 * thread of the server's own, started by the first upload's first bytes, at the import thread's lower
 * priority (IMPORT_THREAD_NICE): the inspection is the upload's only per-byte work in JavaScript,
 * and on the server's thread it took the turns that searches and submissions wait for while a
 * large file arrived.
 *
 * `check()` is a ContentCheck as src/domain/uploads/upload.ts takes it. Each chunk goes on to
 * storage at once and a copy to the thread, through memory the two threads share; the upload
 * waits whenever INSPECTION_WINDOW_BYTES are on their way to the thread or being inspected. The
 * file's problem comes back as InvalidImportFile, as soon as the
 * thread finds it (the upload is then failed, and its storage undone, at once); the end of the
 * stream waits for the verdict, so that a stored file has always been inspected to its last byte.
 * When the thread stops, the uploads it was inspecting fail with InspectionFault and the next
 * upload starts it again.
 */
export function createUploadInspection(opts: { nice: number; log: Logger }) {
  const open = new Map<number, Open>();
  let nextId = 0;
  let thread: Worker | undefined;
  let closed = false;

  /** An upload is over for the thread: once none is left, the idle thread does not keep the process alive. */
  const forget = (id: number): boolean => {
    const had = open.delete(id);
    if (open.size === 0) thread?.unref();
    return had;
  };

  function start(): Worker {
    const t = new Worker(new URL('./upload-inspection-entry.mjs', import.meta.url), {
      workerData: { nice: opts.nice } satisfies InspectionData,
      // A small young generation, as the import thread's: the inspection allocates little that lives.
      resourceLimits: { maxYoungGenerationSizeMb: 8 },
    });
    t.on('message', (msg: InspectionReply) => {
      const upload = open.get(msg.id);
      if (!upload) return;
      if ('freed' in msg) {
        upload.inUse--;
        upload.resume?.();
        return;
      }
      forget(msg.id);
      if ('dataRows' in msg) upload.settle(msg.dataRows);
      else upload.fail('invalid' in msg ? new InvalidImportFile(msg.invalid) : faultOf(msg.fault.code));
    });
    t.on('error', (err) => opts.log.error({ err }, 'the upload inspection thread failed'));
    t.once('exit', () => {
      if (thread === t) thread = undefined;
      for (const upload of open.values()) upload.fail(new InspectionFault());
      open.clear();
    });
    return t;
  }

  function check(): ContentCheck {
    if (closed) throw new InspectionFault();
    const id = nextId++;
    /** The thread inspecting this upload, from its first byte. */
    let worker: Worker | undefined;
    let rows = 0;
    let failure: Error | undefined;
    let ended: ((err?: Error | null) => void) | undefined;
    const send = (msg: InspectionRequest) => worker?.postMessage(msg);
    const upload: Open = {
      inUse: 0,
      fail(err) {
        failure ??= err;
        forget(id);
        if (ended) ended(failure);
        else stream.destroy(failure);
      },
      settle(dataRows) {
        rows = dataRows;
        ended?.(null);
      },
    };
    /** Followed from its first byte (or its end), so that a check never used holds nothing. */
    const follow = () => {
      if (worker) return;
      // Closed (the server is stopping): no thread is started again.
      if (closed) throw new InspectionFault();
      worker = thread ??= start();
      open.set(id, upload);
      worker.ref();
    };
    /**
     * The upload's memory shared with the thread, allocated once at its first byte: the chunks'
     * bytes are copied into its slots in turn, and a full slot is sent (its number and length),
     * so that no buffer is allocated per message on either thread. The thread frees a slot once
     * it holds no view of it (see upload-inspection-main.ts).
     */
    let memory: Buffer | undefined;
    /** Slots sent so far: the one being filled is `sent % SLOTS`. */
    let sent = 0;
    let filled = 0;
    const sendSlot = () => {
      if (filled === 0) return;
      send({ op: 'chunk', id, slot: sent % SLOTS, length: filled });
      sent++;
      upload.inUse++;
      filled = 0;
    };
    /** Copies `chunk` from `at` into the slots; calls `then` once all of it is copied, waiting for slots to be freed. */
    const take = (chunk: Buffer, at: number, then: () => void) => {
      while (at < chunk.length) {
        if (upload.inUse === SLOTS) {
          upload.resume = () => {
            upload.resume = undefined;
            if (!failure) take(chunk, at, then);
          };
          return;
        }
        if (!memory) {
          const shared = new SharedArrayBuffer(INSPECTION_WINDOW_BYTES);
          memory = Buffer.from(shared);
          send({ op: 'open', id, memory: shared, slotBytes: SLOT_BYTES });
        }
        const slot = (sent % SLOTS) * SLOT_BYTES;
        const n = chunk.copy(memory, slot + filled, at, at + SLOT_BYTES - filled);
        filled += n;
        at += n;
        if (filled === SLOT_BYTES) sendSlot();
      }
      then();
    };
    const stream = new Transform({
      transform(chunk: Buffer, _enc, done) {
        if (failure) return done(failure);
        try {
          follow();
        } catch (err) {
          return done(err as Error);
        }
        take(chunk, 0, () => done(null, chunk));
      },
      flush(done) {
        if (failure) return done(failure);
        try {
          follow();
        } catch (err) {
          return done(err as Error);
        }
        ended = (err) => {
          ended = undefined;
          done(err ?? null);
        };
        sendSlot();
        send({ op: 'end', id });
      },
      destroy(err, done) {
        // Failed elsewhere (too large, the storage) or here: the thread forgets the upload.
        upload.resume = undefined;
        memory = undefined;
        forget(id);
        // Always, even after the thread's verdict: chunks sent before it are to be dropped there.
        send({ op: 'abort', id });
        done(err);
      },
    });
    return { stream, dataRows: () => rows };
  }

  return {
    check,
    /** Stops the thread; uploads it was inspecting fail. */
    async close(): Promise<void> {
      closed = true;
      await thread?.terminate();
    },
  };
}
