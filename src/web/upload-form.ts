import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import { AppError, validationError } from '../domain/errors';
import type { Upload } from '../domain/uploads/upload';
import { noFileChosen } from './messages';

/**
 * The dashboard's one multipart reader for its upload forms (the CSV import, the file of plates):
 * the same limits for both, the CSRF check before any byte of a file is read, and the `file` part
 * handed to the domain's upload (src/domain/uploads/upload.ts).
 */

/**
 * Registers the multipart parser in an upload page's plugin. One byte past IMPORT_MAX_BYTES
 * reaches the upload, which refuses the file as that byte arrives (as the API's uploads).
 */
export async function registerUploadForms(app: FastifyInstance): Promise<void> {
  await app.register(multipart, {
    limits: { fileSize: app.deps.config.importMaxBytes + 1, files: 1, fields: 5, fieldSize: 1024, parts: 10 },
  });
}

/**
 * The CSRF check of @fastify/csrf-protection, for a multipart upload: the token comes from the
 * X-CSRF-Token header (the page script) or from the `_csrf` field sent before the file (the
 * plain form), which only the handler can read, so it runs here instead of as a preHandler.
 */
function verifyCsrf(app: FastifyInstance, request: FastifyRequest, token: string | undefined): Promise<void> {
  const body = request.body;
  request.body = { _csrf: token };
  return new Promise<void>((resolve, reject) => {
    const refuse = { send: (err: Error) => reject(err) } as unknown as FastifyReply;
    app.csrfProtection(request, refuse, () => resolve());
  }).finally(() => {
    request.body = body;
  });
}

/** An upload form as read: what `receive` made of its file, and its text fields (`_csrf` aside). */
export type UploadForm<T> = { received: T; fields: Record<string, string> };

/**
 * Reads an upload form: the fields, the CSRF token checked at the first file part (or at the end
 * when there is none), and the first `file` part with a file chosen handed to `receive` with the
 * fields sent before it; other parts are drained. A form without a chosen file is a 422 on the
 * file. When reading the rest of the form fails after `receive`, `undo` is given what it made.
 */
export async function readUploadForm<T>(
  app: FastifyInstance,
  request: FastifyRequest,
  receive: (upload: Upload, fields: Record<string, string>) => Promise<T>,
  undo?: (received: T) => Promise<void>,
): Promise<UploadForm<T>> {
  const header = request.headers['x-csrf-token'];
  let token = typeof header === 'string' ? header : undefined;
  const fields: Record<string, string> = {};
  let checked = false;
  let received: { value: T } | undefined;
  try {
    if (request.isMultipart()) {
      for await (const part of request.parts()) {
        if (part.type === 'field') {
          if (typeof part.value !== 'string') continue;
          if (part.fieldname === '_csrf') token ??= part.value;
          else fields[part.fieldname] = part.value;
          continue;
        }
        if (!checked) {
          await verifyCsrf(app, request, token).catch((err: unknown) => {
            part.file.resume();
            throw err;
          });
          checked = true;
        }
        // A form sent without a chosen file still has a file part: no name, no bytes.
        if (part.fieldname !== 'file' || received || part.filename === '') {
          part.file.resume();
          continue;
        }
        request.uploadGuard?.attach(part.file);
        const stream = request.uploadGuard?.read(part.file) ?? part.file;
        const upload = { fileName: part.filename, stream, truncated: () => part.file.truncated };
        received = { value: await receive(upload, { ...fields }) };
      }
    }
    if (!checked) await verifyCsrf(app, request, token);
    if (!received) throw validationError({ file: [noFileChosen] });
    return { received: received.value, fields };
  } catch (err) {
    if (received && undo) await undo(received.value);
    throw err;
  }
}

/**
 * An upload form's problem as its page shows it next to the file field: the file's (422) or a
 * passing one (503, try again later). Any other error is rethrown, for the error pages.
 */
export function fileFieldError(err: unknown): { status: 422 | 503; message: string } {
  if (!(err instanceof AppError) || (err.code !== 'VALIDATION_FAILED' && err.code !== 'UNAVAILABLE')) throw err;
  return { status: err.code === 'UNAVAILABLE' ? 503 : 422, message: err.message };
}
