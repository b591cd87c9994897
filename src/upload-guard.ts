import { Transform, type Readable } from 'node:stream';

import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

import { AppError } from './domain/errors';
import './http-conditions';

/** Seconds a client is asked to wait when every upload slot is taken. */
export const UPLOADS_BUSY_RETRY_AFTER_SECONDS = 5;
/**
 * Upload bytes read between two young-generation collections asked for while uploads arrive (see
 * the plugin): well under the 64 MB of external memory past which V8 collects the whole heap.
 */
export const YOUNG_COLLECTION_EVERY_BYTES = 4 * 1024 * 1024;
/** Uploads are paced (UPLOAD_PACE_BYTES_PER_SECOND) for this long after any other request arrived. */
export const PACE_AFTER_REQUEST_MS = 1000;
/**
 * How far the uploads' reading may fall behind the pace and then catch up: a timer that fired late,
 * a moment the storage held the reading back.
 */
const PACE_SLACK_MS = 250;
/** A client address is warned of at most once in this long (slow senders come in crowds). */
const WARN_EVERY_MS = 60_000;

export const uploadMessages = {
  busy: 'The server is reading as many uploads as it can right now; nothing was stored. Try again in a few seconds.',
  tooSlow: (minBytesPerSecond: number, seconds: number) =>
    `The upload arrived too slowly (under ${minBytesPerSecond} bytes a second for ${seconds} seconds) and was cut off; nothing was stored. Send the file again.`,
} as const;

/** An upload whose sender kept under UPLOAD_MIN_BYTES_PER_SECOND: 408 `upload_too_slow`. */
export class UploadTooSlow extends AppError {
  constructor(minBytesPerSecond: number, seconds: number) {
    super('TIMEOUT', uploadMessages.tooSlow(minBytesPerSecond, seconds), undefined, 'upload_too_slow');
  }
}

export type UploadGuard = {
  /** The file part being read: a sender cut off destroys it with UploadTooSlow. */
  attach(file: Readable): void;
  /** The file's bytes as the upload is to read them: paced while other requests arrive, counted for the young collections (see the plugin). */
  read(file: Readable): Readable;
  /** Set when the sender was cut off. */
  readonly cut: UploadTooSlow | undefined;
};

/** The time the uploads' pace is kept by: milliseconds from any origin, and a wait of so many of them. */
export type PaceClock = { now: () => number; wait: (ms: number) => Promise<void> };

const realPaceClock: PaceClock = {
  now: () => performance.now(),
  wait: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

declare module 'fastify' {
  interface FastifyRequest {
    uploadGuard: UploadGuard | null;
  }
}

/**
 * Upload pressure, on the routes marked `config: { upload: true }` (the CSV import, the batch
 * look-up, the dashboard's uploads):
 *
 * - at most MAX_CONCURRENT_UPLOADS bodies are read at once by this process; another upload is
 *   answered 503 `too_many_uploads` with Retry-After at once, before its body is read (Node
 *   discards what it sends), so that waiting uploads hold no memory;
 * - a sender that delivers less than UPLOAD_MIN_BYTES_PER_SECOND over
 *   UPLOAD_MIN_RATE_WINDOW_SECONDS is cut off: its part fails with UploadTooSlow (408, and the
 *   connection is closed), so that slow senders cannot hold sockets and memory. Time the server
 *   itself holds the body back (its storage is slow) is not counted against the sender. Logged at
 *   warn, once per client address a minute.
 *
 * A slot is taken when the request arrives and given back once its body has been read (or the
 * response is over): the wait for an import's result holds none.
 *
 * For PACE_AFTER_REQUEST_MS after any other request arrived, the uploads together are read at
 * most UPLOAD_PACE_BYTES_PER_SECOND (0: never paced): reading an upload at full speed takes the
 * server's thread and the machine's cores from the searches and submissions beside it. An upload
 * alone is read as fast as it arrives. Time spent paced is the server holding the body back, not
 * the sender being slow (the configuration keeps the pace above the slowest rate allowed to all
 * uploads at once).
 *
 * Given `youngCollection` (V8's young-generation collection; the server passes it), one runs
 * every YOUNG_COLLECTION_EVERY_BYTES of uploads read. The socket's chunks are memory outside
 * V8's heap, freed only when a collection finds them dead; the few small objects each chunk makes
 * fill the young generation slowly, so without these V8 let the dead chunks reach its limit for
 * external memory and collected the whole heap for them: 17 to 24 pauses of 2 to 19 ms for every
 * request during two 200 MB uploads. With these, 3 to 8 remain, and a young collection of dead
 * chunks takes about a millisecond (docs/performance.md).
 */
export const uploadGuardPlugin = fp(
  async (app: FastifyInstance, opts: { youngCollection?: (() => void) | undefined; paceClock?: PaceClock | undefined }) => {
    const {
      maxConcurrentUploads: max,
      uploadMinBytesPerSecond: minRate,
      uploadMinRateWindowSeconds: windowSeconds,
      uploadPaceBytesPerSecond: pace,
    } = app.deps.config;
    const windowMs = windowSeconds * 1000;
    const tickMs = Math.min(1000, windowMs / 10);
    let active = 0;
    const warned = new Map<string, number>();

    const warnOnce = (ip: string, log: FastifyInstance['log']) => {
      const now = Date.now();
      if (warned.size > 10_000) for (const [k, at] of warned) if (now - at >= WARN_EVERY_MS) warned.delete(k);
      const last = warned.get(ip);
      if (last !== undefined && now - last < WARN_EVERY_MS) return;
      warned.set(ip, now);
      log.warn({ client: ip, minBytesPerSecond: minRate, windowSeconds }, 'upload too slow: cut off');
    };

    const { youngCollection } = opts;
    /** Upload bytes read since the last young collection. */
    let sinceCollection = 0;

    const clock = opts.paceClock ?? realPaceClock;
    /** When the last request other than an upload arrived. */
    let otherRequestAt = -Infinity;
    /** When the uploads' bytes read so far are due at the pace (all uploads together). */
    let dueAt = -Infinity;

    /** The file's chunks as they are read: counted towards the next young collection, and paced. */
    const read = (file: Readable): Readable => {
      if (!youngCollection && pace === 0) return file;
      const counted = new Transform({
        transform(chunk: Buffer, _enc, done) {
          if (youngCollection && (sinceCollection += chunk.length) >= YOUNG_COLLECTION_EVERY_BYTES) {
            sinceCollection = 0;
            youngCollection();
          }
          if (pace > 0) {
            const now = clock.now();
            if (now - otherRequestAt < PACE_AFTER_REQUEST_MS) {
              // Time lost behind the pace is made up for (up to PACE_SLACK_MS), so that the pace is kept on average.
              dueAt = Math.max(dueAt, now - PACE_SLACK_MS) + (chunk.length * 1000) / pace;
              // Under a millisecond is carried in dueAt to the next chunk (a timer cannot wait less).
              if (dueAt - now >= 1) return void clock.wait(dueAt - now).then(() => done(null, chunk));
            }
          }
          done(null, chunk);
        },
      });
      file.on('error', (err) => counted.destroy(err));
      return file.pipe(counted);
    };

    app.decorateRequest('uploadGuard', null);
    app.addHook('onRequest', (request, reply, done) => {
      if (!request.routeOptions.config?.upload) {
        if (pace > 0) otherRequestAt = clock.now();
        return done();
      }
      if (active >= max) {
        request.log.info({ active, max }, 'upload refused: every upload slot is taken');
        // The API's error body (the dashboard's page script reads `message` from it too).
        void reply
          .status(503)
          .header('retry-after', String(UPLOADS_BUSY_RETRY_AFTER_SECONDS))
          .send({ message: uploadMessages.busy, code: 'too_many_uploads', request_id: request.id });
        return;
      }
      active++;
      const req = request.raw;
      let released = false;
      let file: Readable | undefined;
      let cut: UploadTooSlow | undefined;
      let timer: NodeJS.Timeout | undefined;
      const release = () => {
        clearInterval(timer);
        if (released) return;
        released = true;
        active--;
      };
      reply.raw.once('close', release);
      const socket = req.socket as { bytesRead?: unknown } | null;
      if (typeof socket?.bytesRead === 'number') {
        let last = socket.bytesRead;
        let spentMs = 0;
        let got = 0;
        timer = setInterval(() => {
          if (req.complete || req.destroyed) return release();
          const now = socket.bytesRead as number;
          const delta = now - last;
          last = now;
          // Held back by this side (its storage is slow): not the sender's time.
          if (req.isPaused() && delta === 0) return;
          if (minRate === 0) return;
          spentMs += tickMs;
          got += delta;
          if (spentMs < windowMs) return;
          const rate = (got * 1000) / spentMs;
          spentMs = 0;
          got = 0;
          if (rate >= minRate) return;
          clearInterval(timer);
          cut = new UploadTooSlow(minRate, windowSeconds);
          warnOnce(request.ip, request.log);
          if (file && !file.destroyed) file.destroy(cut);
          else if (req.listenerCount('error') > 0) req.emit('error', cut);
          else req.destroy();
        }, tickMs);
        timer.unref();
      }
      request.uploadGuard = {
        attach: (f) => void (file = f),
        read,
        get cut() {
          return cut;
        },
      };
      done();
    });
  },
  { name: 'upload-guard' },
);
