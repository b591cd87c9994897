import { createHash } from 'node:crypto';
import { PassThrough, Transform, type Readable, type Writable } from 'node:stream';
import { createGunzip } from 'node:zlib';

import { AppError, validationError, type FieldErrors } from '../errors';
import { checkFileName, fileMessages, InvalidImportFile, sanitizeFileName } from '../imports/csv-file';
import { deleteObject, ObjectTooLarge, StorageTimeout, type ObjectStore } from '../storage';

/**
 * The one way an uploaded file (a CSV import, a batch plate look-up) reaches the object store:
 * its name checked before any byte is read; its bytes counted, hashed (SHA-256) and checked by
 * the kind of file's content check as they pass, the byte past the limit refused as it arrives;
 * stored under a key the caller generated; and undone when anything fails, so that a refused
 * upload leaves nothing stored. The multipart readers (src/api/upload-part.ts for the API,
 * src/web/upload-form.ts for the dashboard) hand the file part over as an `Upload`.
 */

/** An uploaded file as a multipart reader hands it over; `truncated` is the reader's own size limit hit. */
export type Upload = { fileName: string | undefined; stream: Readable; truncated: () => boolean };

/** A stored upload: its key, the name to show, its size, its SHA-256 (hex) and its data rows. */
export type StoredFile = { objectKey: string; fileName: string; size: number; sha256: string; dataRows: number };

/**
 * The check of a kind of file, a pass-through stream: it fails with InvalidImportFile as soon as
 * the bytes show the file's problem; `dataRows()` is the count once every byte has passed.
 */
export type ContentCheck = { stream: Transform; dataRows(): number };

export const storedFileMessages = {
  storageTimeout: 'The file could not be stored in time; nothing was stored. Try again.',
} as const;

/**
 * The file's name (only .csv and .txt) with the caller's other form errors: one 422 for all of
 * them, before any byte is read; the rest of the upload is drained so that the client gets it.
 */
export function checkUpload(upload: Upload, errors: FieldErrors = {}): void {
  const badName = checkFileName(upload.fileName);
  if (!badName && Object.keys(errors).length === 0) return;
  upload.stream.resume();
  throw validationError({ ...(badName ? { file: [badName] } : {}), ...errors });
}

/** Counts and hashes the bytes as they pass; the byte past `maxBytes` fails the upload at once. */
export function uploadMeter(maxBytes: number) {
  const hash = createHash('sha256');
  let size = 0;
  const stream = new Transform({
    transform(chunk: Buffer, _enc, done) {
      size += chunk.length;
      if (size > maxBytes) return done(new InvalidImportFile([fileMessages.tooLarge(maxBytes)]));
      hash.update(chunk);
      done(null, chunk);
    },
  });
  return { stream, result: () => ({ size, sha256: hash.digest('hex') }) };
}

/**
 * A content check made of a reader of the file's bytes, run beside the upload: `read` resolves
 * with the data rows or rejects with the file's problem, which fails the upload at the next
 * chunk. Each chunk goes on to storage once the reader has taken it, so nothing piles up.
 */
export function readingCheck(read: (bytes: AsyncIterable<Buffer>) => Promise<number>): ContentCheck {
  const tap = new PassThrough();
  let rows = 0;
  let failure: Error | undefined;
  /** The chunk waiting for the reader to take it, if any. */
  let waiting: ((err?: Error | null) => void) | undefined;
  const settled = read(tap).then(
    (n) => void (rows = n),
    (err: unknown) => {
      failure = err instanceof Error ? err : new Error(String(err));
      tap.destroy();
      waiting?.(failure);
    },
  );
  const stream = new Transform({
    transform(chunk: Buffer, _enc, done) {
      if (failure) return done(failure);
      waiting = (err) => {
        waiting = undefined;
        if (err) done(err);
        else done(null, chunk);
      };
      tap.write(chunk, (err) => waiting?.(err ? (failure ?? err) : null));
    },
    flush(done) {
      tap.end();
      void settled.then(() => done(failure ?? null));
    },
    destroy(err, done) {
      // The upload failed elsewhere (too large, the storage): the reader stops too.
      tap.destroy();
      done(err);
    },
  });
  return { stream, dataRows: () => rows };
}

/** A gzip stream's first two bytes (RFC 1952). */
const GZIP_MAGIC = [0x1f, 0x8b] as const;
/**
 * A compressed upload may expand at most this many times (against the compressed bytes received
 * so far), past its first GZIP_FREE_BYTES: a claims CSV compresses about 5 to 1, a decompression
 * bomb a thousand to one.
 */
export const GZIP_MAX_RATIO = 100;
export const GZIP_FREE_BYTES = 1024 * 1024;

/**
 * The first bytes of the upload, put back on the stream: enough to tell a gzip file (at least
 * two bytes, unless the file is shorter). Rejects with the stream's error.
 */
async function peekHead(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  try {
    while (size < GZIP_MAGIC.length) {
      const chunk = stream.read() as Buffer | null;
      if (chunk !== null) {
        parts.push(chunk);
        size += chunk.length;
        continue;
      }
      if (stream.readableEnded || stream.destroyed) break;
      await new Promise<void>((resolve, reject) => {
        const done = () => {
          stream.off('readable', done).off('end', done).off('close', done).off('error', fail);
          resolve();
        };
        const fail = (err: Error) => {
          stream.off('readable', done).off('end', done).off('close', done).off('error', fail);
          reject(err);
        };
        stream.on('readable', done).on('end', done).on('close', done).on('error', fail);
      });
    }
  } finally {
    const head = Buffer.concat(parts);
    if (head.length > 0 && !stream.destroyed) stream.unshift(head);
  }
  return Buffer.concat(parts);
}

/** What a guarded decompression says when it refuses its input. */
export type GunzipRefusals = {
  /** Expanded more than GZIP_MAX_RATIO times past its first GZIP_FREE_BYTES. */
  bomb: string;
  /** Not a valid gzip stream (damaged or cut short). */
  invalid: string;
  /** Past `maxBytes` decompressed bytes (when given). */
  tooLarge?: { maxBytes: number; message: string };
};

/**
 * Decompresses a gzip stream as it passes (node:zlib, streamed), refusing it with
 * InvalidImportFile as a decompression bomb as soon as it has expanded more than GZIP_MAX_RATIO
 * times (against the compressed bytes decompressed so far) past its first GZIP_FREE_BYTES, and past
 * `tooLarge.maxBytes` decompressed bytes when given. Write the compressed bytes to `input`, read
 * the decompressed ones from `output`, where every failure ends up.
 */
export function guardedGunzip(refusals: GunzipRefusals): { input: Writable; output: Readable } {
  let expanded = 0;
  const gunzip = createGunzip();
  const output = new Transform({
    transform(chunk: Buffer, _enc, done) {
      expanded += chunk.length;
      // `bytesWritten`: the compressed bytes the decompression has consumed so far, however large
      // the chunks they came in.
      if (expanded > GZIP_FREE_BYTES && expanded > gunzip.bytesWritten * GZIP_MAX_RATIO) {
        return done(new InvalidImportFile([refusals.bomb]));
      }
      if (refusals.tooLarge && expanded > refusals.tooLarge.maxBytes) return done(new InvalidImportFile([refusals.tooLarge.message]));
      done(null, chunk);
    },
  });
  gunzip.on('error', (err) => {
    // zlib's own codes (Z_DATA_ERROR, Z_BUF_ERROR...): the bytes are not a valid gzip stream.
    const code = (err as { code?: unknown }).code;
    output.destroy(typeof code === 'string' && code.startsWith('Z_') ? new InvalidImportFile([refusals.invalid]) : err);
  });
  gunzip.pipe(output);
  return { input: gunzip, output };
}

/** A gzip file part's decompression: the meter after it counts the decompressed bytes against IMPORT_MAX_BYTES. */
const gunzipGuarded = (fileName: string) =>
  guardedGunzip({ bomb: fileMessages.gzipBomb(fileName, GZIP_MAX_RATIO), invalid: fileMessages.notGzip(fileName) });

export type UploadsDeps = {
  storage: ObjectStore;
  /** `maxBytes`: IMPORT_MAX_BYTES; `uploadTimeoutMs`: IMPORT_UPLOAD_TIMEOUT_SECONDS. */
  limits: { maxBytes: number; uploadTimeoutMs: number };
  /** The uploads held for a person's confirmation (the dashboard's import), forgotten when one is discarded. */
  pendingUploads?: { forget(objectKey: string): Promise<void> };
};

export function createUploads({ storage, limits, pendingUploads }: UploadsDeps) {
  const tooLarge = () => validationError({ file: [fileMessages.tooLarge(limits.maxBytes)] });

  /**
   * Streams the upload through the meter and `check` into `objectKey`. A problem of the file is
   * a 422 as soon as the bytes show it, a storage write past the upload timeout a 503; what is
   * under the service (a full disk, an unreachable storage) is rethrown as it is, for the HTTP
   * layer to answer (src/http-conditions.ts). Whatever fails, nothing stays stored.
   */
  async function store(upload: Upload, objectKey: string, check: ContentCheck): Promise<StoredFile> {
    const metered = uploadMeter(limits.maxBytes);
    const fileName = sanitizeFileName(upload.fileName);
    // A gzip file (its magic bytes, whatever its name) is stored decompressed: the inspector, the
    // import's reader and the batch look-up read the CSV as it is, and the limit, the size and
    // the SHA-256 are the CSV's.
    const head = await peekHead(upload.stream);
    const gzip = head[0] === GZIP_MAGIC[0] && head[1] === GZIP_MAGIC[1] ? gunzipGuarded(fileName) : undefined;
    if (gzip) upload.stream.pipe(gzip.input);
    const source: Readable = gzip ? gzip.output : upload.stream;
    // Errors do not travel along pipes: each stream hands its own on, to the one storage reads.
    upload.stream.on('error', (err) => (gzip ? gzip.input : metered.stream).destroy(err));
    if (gzip) gzip.output.on('error', (err) => metered.stream.destroy(err));
    metered.stream.on('error', (err) => check.stream.destroy(err));
    // The upload flows as soon as it is piped, possibly before storage attaches its own handlers
    // (while it creates a folder or a bucket): an early rejection stays on the stream, where the
    // storage write finds it, instead of being thrown as an unhandled 'error' event.
    check.stream.on('error', () => {});
    try {
      // One byte over the limit tells "too large" apart from "exactly at the limit" (the meter refuses it first).
      await storage.putStream(objectKey, source.pipe(metered.stream).pipe(check.stream), {
        maxBytes: limits.maxBytes + 1,
        timeoutMs: limits.uploadTimeoutMs,
      });
    } catch (err) {
      // The storage write has removed what it had stored. Let the rest of the upload drain, so
      // that the client gets the answer rather than a reset.
      upload.stream.unpipe();
      upload.stream.resume();
      if (upload.truncated() || err instanceof ObjectTooLarge) throw tooLarge();
      if (err instanceof InvalidImportFile) throw validationError(err.fields);
      if (err instanceof StorageTimeout) throw new AppError('UNAVAILABLE', storedFileMessages.storageTimeout);
      throw err;
    }
    if (upload.truncated()) {
      await deleteObject(storage, objectKey);
      throw tooLarge();
    }
    const { size, sha256 } = metered.result();
    return { objectKey, fileName, size, sha256, dataRows: check.dataRows() };
  }

  /** Removes a stored file that will not be used, and forgets it if it was held for a confirmation. */
  async function discard(file: Pick<StoredFile, 'objectKey'>): Promise<void> {
    await deleteObject(storage, file.objectKey);
    await pendingUploads?.forget(file.objectKey);
  }

  /** Stores the upload, then hands it to `use`; when `use` fails, the file is discarded. */
  async function storeFor<T>(upload: Upload, objectKey: string, check: ContentCheck, use: (file: StoredFile) => Promise<T>): Promise<T> {
    const file = await store(upload, objectKey, check);
    try {
      return await use(file);
    } catch (err) {
      await discard(file);
      throw err;
    }
  }

  return { store, storeFor, discard };
}
export type Uploads = ReturnType<typeof createUploads>;
