import { finished, Transform, type Readable } from 'node:stream';

import multipart, { type MultipartFile } from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';

import { AppError, validationError } from '../../domain/errors';
import { fileMessages, InvalidImportFile } from '../../domain/imports/csv-file';
import { GZIP_MAX_RATIO, guardedGunzip, type Upload } from '../../domain/uploads/upload';

/**
 * The API's one multipart reader for uploads (the CSV import, the batch plate look-up): the same
 * limits for both, and the `file` part handed to the domain's upload (src/domain/uploads/upload.ts).
 */

/**
 * The decompressed body a multipart form may take past IMPORT_MAX_BYTES: its other fields, the
 * parts' headers and boundaries (the parser's limits keep them far under this).
 */
export const MULTIPART_FRAMING_BYTES = 1024 * 1024;

/**
 * Registers the multipart parser in an upload route's plugin. One byte past IMPORT_MAX_BYTES
 * reaches the upload, which refuses the file as that byte arrives (past `fileSize` busboy would
 * quietly truncate the file and hold the answer until the whole body had been read; `truncated`
 * stays a backstop). A body sent with `Content-Encoding: gzip` is decompressed as it is read
 * (`decodeBody`); any other encoding but `identity` is refused with 415 before the body is read.
 */
export async function registerUploadParser(app: FastifyInstance): Promise<void> {
  const maxBytes = app.deps.config.importMaxBytes;
  await app.register(multipart, {
    limits: { fileSize: maxBytes + 1, files: 1, fields: 10, fieldSize: 1024, parts: 20 },
  });
  app.addHook('preParsing', async (request, reply, payload) => {
    if (!request.routeOptions.config.upload) return payload;
    const encoding = contentEncodingOf(request.headers['content-encoding']);
    if (encoding === 'identity') return payload;
    if (encoding !== 'gzip') {
      // RFC 7694: the 415 names the encodings the server takes.
      reply.header('accept-encoding', 'gzip');
      throw new AppError('UNSUPPORTED_MEDIA_TYPE', uploadPartMessages.unsupportedEncoding, undefined, 'unsupported_media_type');
    }
    return decodeBody(request, reply.raw, payload, maxBytes);
  });
}

export const uploadPartMessages = {
  cutShort:
    'The upload ended before the file was complete (the multipart body has no closing boundary); nothing was stored. Send the file again.',
  unsupportedEncoding:
    'The Content-Encoding header of an upload must be gzip or identity (or left out); the body was not read and nothing was stored.',
  bodyGzipBomb: `The request body (Content-Encoding: gzip) expands more than ${GZIP_MAX_RATIO} times when decompressed, past its first megabyte: it was refused as a decompression bomb; nothing was stored.`,
  bodyNotGzip:
    'The request body is not valid gzip as its Content-Encoding header says (damaged or cut short); nothing was stored. Send the file again.',
} as const;

/**
 * `Content-Encoding` as the upload routes take it: absent or `identity`, `gzip` (`x-gzip`, its
 * old name, too), else the header as sent (refused). One encoding only: "gzip, gzip" is refused.
 */
function contentEncodingOf(header: string | string[] | undefined): string {
  const value = (Array.isArray(header) ? header.join(',') : (header ?? '')).trim().toLowerCase();
  if (value === '' || value === 'identity') return 'identity';
  if (value === 'gzip' || value === 'x-gzip') return 'gzip';
  return value;
}

/** The decompressed body of each upload sent with Content-Encoding: gzip, as `decodeBody` made it. */
const decodedBodies = new WeakMap<FastifyRequest, Readable & { headers: FastifyRequest['headers'] }>();

/**
 * The body of an upload sent with `Content-Encoding: gzip`, decompressed as the multipart parser
 * reads it (never held whole): the same decompression-bomb guard as a gzip file part, and
 * IMPORT_MAX_BYTES (with the form's framing) counting the decompressed bytes, both refused with
 * 422 as the bytes arrive; the file part's own meter counts the file's bytes as for any upload.
 * Returned from the preParsing hook, as Fastify replaces a payload stream; @fastify/multipart
 * reads `request.raw` whatever that hook returns (fastify/fastify-multipart#620), so `filePart`
 * hands it this stream in its place. On a failure the rest of the compressed body is drained,
 * so that the client gets the answer rather than a reset.
 */
function decodeBody(
  request: FastifyRequest,
  response: NodeJS.EventEmitter,
  payload: Readable & { complete?: boolean },
  maxBytes: number,
): Readable {
  const { input, output } = guardedGunzip({
    bomb: uploadPartMessages.bodyGzipBomb,
    invalid: uploadPartMessages.bodyNotGzip,
    tooLarge: { maxBytes: maxBytes + MULTIPART_FRAMING_BYTES, message: fileMessages.tooLarge(maxBytes) },
  });
  // The parser reads the form's boundary from the headers of what it reads.
  const decoded = Object.assign(output, { headers: request.headers });
  payload.pipe(input);
  payload.on('error', (err) => input.destroy(err));
  // A client gone before the end of its body: the parser is told, as it is by the request itself.
  payload.on('close', () => {
    if (payload.complete === false && !decoded.destroyed)
      decoded.destroy(new Error('The request was closed before its body was complete.'));
  });
  const drain = () => {
    payload.unpipe(input);
    payload.resume();
  };
  // Kept on the stream (`errored`) for the handler, which may not be reading yet.
  decoded.on('error', drain);
  // Answered before the body was read to its end (a refused file, a body that is not multipart):
  // the rest is drained without being decompressed, and the parser is told the body is over.
  response.once('close', () => {
    if (decoded.readableEnded || decoded.destroyed) return;
    drain();
    decoded.destroy();
  });
  decodedBodies.set(request, decoded);
  return decoded;
}

/** The decoded body's refusal (a bomb, not gzip, too large), once it has failed with one. */
function bodyRefusal(request: FastifyRequest): AppError | undefined {
  const err = decodedBodies.get(request)?.errored;
  return err instanceof InvalidImportFile ? validationError(err.fields) : undefined;
}

/**
 * The file part of a decoded body, whose end waits for the end of the whole body: a gzip body is
 * taken only whole, its checksum verified, so that a body cut or damaged after the file part
 * (its last bytes hold the checksum) fails the upload with the body's refusal, as the bytes of
 * a gzip file part do.
 */
function endingWithBody(file: Readable, body: Readable): Readable {
  const gate = new Transform({
    transform(chunk: Buffer, _enc, done) {
      done(null, chunk);
    },
    flush(done) {
      if (body.readableEnded) return done();
      // What follows the file part (the closing boundary) is read on, whether the parser still reads or not.
      body.resume();
      finished(body, { writable: false }, (err) => done(body.errored ?? err ?? null));
    },
  });
  file.on('error', (err) => gate.destroy(err));
  return file.pipe(gate);
}

/**
 * The `file` part of an upload; anything else (no multipart, no file, another field name) is the
 * import's 422 on `file`.
 */
async function filePart(request: FastifyRequest): Promise<MultipartFile> {
  // A decoded body that failed before the handler read it would never end: its refusal is the answer.
  const early = bodyRefusal(request);
  if (early) throw early;
  const decoded = decodedBodies.get(request);
  // The parser reads `this.raw`: for a gzip body, the request as it is with the decoded body as its raw stream.
  const reader = decoded ? (Object.create(request, { raw: { value: decoded } }) as FastifyRequest) : request;
  let part: MultipartFile | undefined;
  try {
    part = request.isMultipart() ? await reader.file() : undefined;
  } catch {
    part = undefined;
  }
  // Cut off for sending too slowly before the file part began (upload-guard.ts).
  if (request.uploadGuard?.cut) throw request.uploadGuard.cut;
  // The decoded body refused before the file part began (a bomb in the form's first fields).
  const refused = bodyRefusal(request);
  if (refused) throw refused;
  if (part) request.uploadGuard?.attach(part.file);
  if (!part || part.fieldname !== 'file') {
    part?.file.resume();
    throw validationError({ file: [fileMessages.required] });
  }
  return part;
}

/**
 * Reads the upload's `file` part and hands it to `receive` with the form fields sent before it.
 * A multipart body that ends without its closing boundary destroys the file part with an error,
 * possibly before `receive` reads it (then nothing would ever flow): either way it is a 422 at
 * once, and the storage write has removed what it had stored.
 */
export async function receiveFilePart<T>(
  request: FastifyRequest,
  receive: (upload: Upload, fields: Record<string, unknown>) => Promise<T>,
): Promise<T> {
  const part = await filePart(request);
  const cutShort = () => part.file.errored !== null || (part.file.destroyed && !part.file.readableEnded);
  if (cutShort()) throw bodyRefusal(request) ?? validationError({ file: [uploadPartMessages.cutShort] });
  // Each field sent once before the file, as sent.
  const fields: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(part.fields)) {
    if (field && !Array.isArray(field) && field.type === 'field') fields[name] = field.value;
  }
  const decoded = decodedBodies.get(request);
  const whole = decoded ? endingWithBody(part.file, decoded) : part.file;
  const stream = request.uploadGuard?.read(whole) ?? whole;
  try {
    return await receive({ fileName: part.filename, stream, truncated: () => part.file.truncated }, fields);
  } catch (err) {
    if (!(err instanceof AppError) && cutShort()) throw bodyRefusal(request) ?? validationError({ file: [uploadPartMessages.cutShort] });
    throw err;
  }
}
