import type { FastifyRequest } from 'fastify';

import { diskFullWhere } from './db/db';
import type { PublicErrorCode } from './domain/errors';
import { StorageUnavailable } from './domain/storage';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route reads an uploaded file: MAX_CONCURRENT_UPLOADS and the slow-sender limit apply, a full disk is a 507. */
    upload?: boolean;
  }
}

/** Seconds a client is asked to wait after a write refused for a full disk. */
export const DISK_FULL_RETRY_AFTER_SECONDS = 60;
/** Seconds a client is asked to wait after the file storage was unreachable. */
export const STORAGE_RETRY_AFTER_SECONDS = 5;

export const conditionMessages = {
  insufficientStorage: 'There is no storage space left for this file right now; nothing was stored. Try again later.',
  storageFull: 'The registry cannot write right now: its storage is full. Nothing was changed; try again later.',
  storageUnavailable: 'The file storage cannot be reached right now; nothing was stored. Try again shortly.',
} as const;

/**
 * The known conditions of what is under the service, answered as what they are rather than a
 * 500: a full disk (507 for an upload, 503 `storage_full` for any other write, counted and
 * logged as such) and an unreachable file storage (503 `storage_unavailable`, named as the
 * storage's, not the database's). Also used by the dashboard's error pages.
 */
export function conditionOf(
  err: unknown,
  request: FastifyRequest,
): { status: number; code: PublicErrorCode; message: string; retryAfter: number } | undefined {
  const where = diskFullWhere(err);
  if (where) {
    request.server.deps.diskFull.report(where, err);
    return request.routeOptions.config?.upload
      ? {
          status: 507,
          code: 'insufficient_storage',
          message: conditionMessages.insufficientStorage,
          retryAfter: DISK_FULL_RETRY_AFTER_SECONDS,
        }
      : { status: 503, code: 'storage_full', message: conditionMessages.storageFull, retryAfter: DISK_FULL_RETRY_AFTER_SECONDS };
  }
  if (err instanceof StorageUnavailable) {
    request.log.warn(
      { err: { message: err.message, cause: (err.cause as { code?: unknown } | undefined)?.code } },
      'file storage unavailable',
    );
    return {
      status: 503,
      code: 'storage_unavailable',
      message: conditionMessages.storageUnavailable,
      retryAfter: STORAGE_RETRY_AFTER_SECONDS,
    };
  }
  return undefined;
}
