import multipart, { type MultipartFile } from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';

import { AppError, validationError } from '../../domain/errors';
import { fileMessages } from '../../domain/imports/csv-file';
import type { Upload } from '../../domain/uploads/upload';

/**
 * The API's one multipart reader for uploads (the CSV import, the batch plate look-up): the same
 * limits for both, and the `file` part handed to the domain's upload (src/domain/uploads/upload.ts).
 */

/**
 * Registers the multipart parser in an upload route's plugin. One byte past IMPORT_MAX_BYTES
 * reaches the upload, which refuses the file as that byte arrives (past `fileSize` busboy would
 * quietly truncate the file and hold the answer until the whole body had been read; `truncated`
 * stays a backstop).
 */
export async function registerUploadParser(app: FastifyInstance): Promise<void> {
  await app.register(multipart, {
    limits: { fileSize: app.deps.config.importMaxBytes + 1, files: 1, fields: 10, fieldSize: 1024, parts: 20 },
  });
}

export const uploadPartMessages = {
  cutShort:
    'The upload ended before the file was complete (the multipart body has no closing boundary); nothing was stored. Send the file again.',
} as const;

/**
 * The `file` part of an upload; anything else (no multipart, no file, another field name) is the
 * import's 422 on `file`.
 */
async function filePart(request: FastifyRequest): Promise<MultipartFile> {
  let part: MultipartFile | undefined;
  try {
    part = request.isMultipart() ? await request.file() : undefined;
  } catch {
    part = undefined;
  }
  // Cut off for sending too slowly before the file part began (upload-guard.ts).
  if (request.uploadGuard?.cut) throw request.uploadGuard.cut;
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
  if (cutShort()) throw validationError({ file: [uploadPartMessages.cutShort] });
  // Each field sent once before the file, as sent.
  const fields: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(part.fields)) {
    if (field && !Array.isArray(field) && field.type === 'field') fields[name] = field.value;
  }
  try {
    return await receive({ fileName: part.filename, stream: part.file, truncated: () => part.file.truncated }, fields);
  } catch (err) {
    if (!(err instanceof AppError) && cutShort()) throw validationError({ file: [uploadPartMessages.cutShort] });
    throw err;
  }
}
