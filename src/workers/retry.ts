/**
 * The one retry rule of every job, on BullMQ and in process alike: the n-th failed attempt is
 * followed by a wait of 2 s × 2^(n-1) (BullMQ's exponential backoff), up to IMPORT_ATTEMPTS
 * attempts. Kept free of bullmq so that a server without REDIS_URL never loads the queue libraries.
 */
export const RETRY_BACKOFF = { type: 'exponential', delay: 2000 } as const;

/** The wait after `attemptsMade` failed attempts (1 or more), as BullMQ computes RETRY_BACKOFF. */
export const retryDelayMs = (attemptsMade: number): number => RETRY_BACKOFF.delay * 2 ** (attemptsMade - 1);
