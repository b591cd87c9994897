/** Field path → messages, in the order the fields were checked. */
export type FieldErrors = Record<string, string[]>;

export const ErrorCode = {
  NOT_FOUND: 'NOT_FOUND',
  CONFLICT: 'CONFLICT',
  VALIDATION_FAILED: 'VALIDATION_FAILED',
  UNAUTHORIZED: 'UNAUTHORIZED',
  FORBIDDEN: 'FORBIDDEN',
  UNAVAILABLE: 'UNAVAILABLE',
  /** The request took too long to arrive (an upload sent too slowly): 408. */
  TIMEOUT: 'TIMEOUT',
  /** The body is sent in a form the route does not take (an upload's Content-Encoding): 415. */
  UNSUPPORTED_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  TOO_MANY_REQUESTS: 'TOO_MANY_REQUESTS',
  INTERNAL: 'INTERNAL',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/**
 * The stable `code` of every error body: programs branch on it, people read `message`. A case
 * with a code of its own (claim_not_found, import_finished, ...) names it as its AppError's
 * `reason`; any other gets the code of its kind. The closed list: the OpenAPI document and the
 * API contract (docs/api.md) name these and no others.
 */
export const ERROR_CODES = [
  'unauthenticated',
  'token_expired',
  'forbidden',
  'insufficient_scope',
  'company_suspended',
  'not_found',
  'claim_not_found',
  'import_not_found',
  'import_finished',
  'conflict',
  'idempotency_in_progress',
  'validation_failed',
  'invalid_json',
  'bad_request',
  'unsupported_media_type',
  'payload_too_large',
  'rate_limited',
  'identity_check_limited',
  'service_unavailable',
  'storage_unavailable',
  'storage_full',
  'insufficient_storage',
  'too_many_uploads',
  'upload_too_slow',
  'server_error',
] as const;
export type PublicErrorCode = (typeof ERROR_CODES)[number];

/**
 * An error meant for the caller: its message is safe to show (no document numbers, no SQL).
 * `code` is the kind (it decides the HTTP status); `reason`, when given, is the stable
 * machine-readable code of this particular case (`claim_not_found`), else one follows from the kind.
 */
export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly fields?: FieldErrors,
    readonly reason?: PublicErrorCode,
  ) {
    super(message);
    this.name = 'AppError';
  }
}

export function validationError(fields: FieldErrors): AppError {
  const first = Object.values(fields)[0]?.[0] ?? 'The given data was invalid.';
  return new AppError('VALIDATION_FAILED', first, fields);
}

export function addFieldError(errors: FieldErrors, field: string, message: string): void {
  (errors[field] ??= []).push(message);
}

/**
 * A transaction lost a race (another one created the same identity document first, or the
 * database chose it as a deadlock victim). Running the whole transaction again resolves it.
 */
export class RetryableConflict extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'RetryableConflict';
  }
}
