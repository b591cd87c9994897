import type { MultipartFile } from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';

import { fileMessages } from '../../domain/imports/csv-file';
import { validationError } from '../../domain/errors';

/**
 * The `file` part of an upload (a CSV import, a batch plate look-up); anything else (no multipart,
 * no file, another field name) is the import's 422 on `file`.
 */
export async function filePart(request: FastifyRequest): Promise<MultipartFile> {
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
