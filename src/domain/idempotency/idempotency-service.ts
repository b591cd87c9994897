import { createHash } from 'node:crypto';

import { AppError, validationError } from '../errors';
import type { IdempotencyRepository } from './idempotency-repository';

export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
/** A response is replayed for this long after the first request. */
export const IDEMPOTENCY_TTL_HOURS = 24;
/** A first request still "in progress" after this long is taken to have died; its key can be used again. */
export const IDEMPOTENCY_STALE_MINUTES = 15;

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/u;

export const idempotencyMessages = {
  invalid: `The ${IDEMPOTENCY_HEADER} header must be 1 to 255 visible ASCII characters.`,
  mismatch: `The ${IDEMPOTENCY_HEADER} header was already used for a different request; use a new key for a new request.`,
  inProgress: `A request with this ${IDEMPOTENCY_HEADER} is still being processed; retry later.`,
} as const;

/** What to send again for a repeated request. */
export type StoredResponse = { body: unknown; location?: string };
export type IdempotencyDecision = { kind: 'proceed' } | { kind: 'replay'; statusCode: number; response: StoredResponse };

/** Keys sorted, so the same JSON body always hashes the same whatever the order of its fields. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** The request's fingerprint: method, path and body (for the import, the file's SHA-256). */
export function requestHash(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method.toUpperCase()} ${path}\n${canonical(body)}`)
    .digest('hex');
}

/**
 * Idempotency-Key for POST requests: the first response to a key is stored and replayed, without
 * writing again, for a repeat of the same request within 24 hours. Concurrent duplicates race on
 * the key's primary key; the loser gets 409 instead of writing a second time. Expired keys are
 * purged now and then (at most hourly per process) as a side effect of completing one.
 */
export function createIdempotencyService({
  repos,
  now = () => Date.now(),
}: {
  repos: { idempotency: IdempotencyRepository };
  now?: () => number;
}) {
  let lastPurge = 0;
  const purgeExpired = () => repos.idempotency.purgeExpired(IDEMPOTENCY_TTL_HOURS);

  async function begin(companyId: string, key: string, hash: string): Promise<IdempotencyDecision> {
    if (!KEY_PATTERN.test(key)) throw validationError({ [IDEMPOTENCY_HEADER]: [idempotencyMessages.invalid] });
    const result = await repos.idempotency.claim(companyId, key, hash, {
      ttlHours: IDEMPOTENCY_TTL_HOURS,
      staleMinutes: IDEMPOTENCY_STALE_MINUTES,
    });
    if (result.claimed) return { kind: 'proceed' };
    const { record } = result;
    if (record.requestHash !== hash) throw validationError({ [IDEMPOTENCY_HEADER]: [idempotencyMessages.mismatch] });
    if (record.statusCode === null) throw new AppError('CONFLICT', idempotencyMessages.inProgress, undefined, 'idempotency_in_progress');
    return { kind: 'replay', statusCode: record.statusCode, response: record.response as StoredResponse };
  }

  /** Stores the first response (any status below 500). */
  async function complete(companyId: string, key: string, statusCode: number, response: StoredResponse): Promise<void> {
    await repos.idempotency.complete(companyId, key, statusCode, response);
    if (now() - lastPurge >= 3_600_000) {
      lastPurge = now();
      await purgeExpired();
    }
  }

  /** Frees the key after a server error, so the client can retry with it. */
  async function release(companyId: string, key: string): Promise<void> {
    await repos.idempotency.release(companyId, key);
  }

  return { begin, complete, release, purgeExpired };
}
export type IdempotencyService = ReturnType<typeof createIdempotencyService>;
