import { Transform } from 'node:stream';
import { Worker } from 'node:worker_threads';

import type { Logger } from 'pino';

import { AppError } from '../domain/errors';
import { InvalidImportFile } from '../domain/imports/csv-file';
import type { ContentCheck } from '../domain/uploads/upload';

export type InspectionData = { nice: number };
export type InspectionRequest = { op: 'chunk'; id: number; bytes: Uint8Array } | { op: 'end'; id: number } | { op: 'abort'; id: number };
export type InspectionReply =
  | { id: number; ack: number }
  | { id: number; dataRows: number }
  | { id: number; invalid: string[] }
  /** Anything but the file's problem (the spill file's disk full, say): its error code, if any. */
  | { id: number; fault: { code?: string } };

/**
 * Bytes of one upload sent to the thread and not yet inspected, at most: past them the upload waits
 * (and so its sender), so that a slow inspection holds at most this much of each upload in memory.
 */
export const INSPECTION_WINDOW_BYTES = 1024 * 1024;

/**
 * Bytes sent to the thread in one message (but the last): a message and its answer cost about as
 * much as inspecting a few kilobytes.
 */
const MESSAGE_BYTES = 256 * 1024;

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
  /** Bytes sent and not yet acknowledged. */
  inFlight: number;
  /** The chunk waiting for the window to open, if any. */
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
 * storage at once and a copy to the thread; the upload waits whenever INSPECTION_WINDOW_BYTES are
 * on their way to the thread. The file's problem comes back as InvalidImportFile, as soon as the
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
      if ('ack' in msg) {
        upload.inFlight -= msg.ack;
        if (upload.inFlight < INSPECTION_WINDOW_BYTES) upload.resume?.();
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
      inFlight: 0,
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
     * Bytes not yet sent: they go to the thread together, MESSAGE_BYTES at a time, copied here from
     * the chunks into one buffer of the upload's own. The message copies what it sends, so that
     * this buffer is filled again at once.
     */
    let batch: Buffer | undefined;
    let batched = 0;
    const sendBatch = () => {
      if (batched === 0) return;
      send({ op: 'chunk', id, bytes: batch!.subarray(0, batched) });
      upload.inFlight += batched;
      batched = 0;
    };
    const take = (chunk: Buffer) => {
      for (let at = 0; at < chunk.length;) {
        batch ??= Buffer.allocUnsafeSlow(MESSAGE_BYTES);
        const n = chunk.copy(batch, batched, at);
        batched += n;
        at += n;
        if (batched === MESSAGE_BYTES) sendBatch();
      }
    };
    const stream = new Transform({
      transform(chunk: Buffer, _enc, done) {
        if (failure) return done(failure);
        try {
          follow();
        } catch (err) {
          return done(err as Error);
        }
        take(chunk);
        if (upload.inFlight < INSPECTION_WINDOW_BYTES) return done(null, chunk);
        upload.resume = () => {
          upload.resume = undefined;
          done(null, chunk);
        };
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
        sendBatch();
        send({ op: 'end', id });
      },
      destroy(err, done) {
        // Failed elsewhere (too large, the storage) or here: the thread forgets the upload.
        batch = undefined;
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
