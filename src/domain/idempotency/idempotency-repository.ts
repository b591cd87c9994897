export type IdempotencyRecord = { requestHash: string; statusCode: number | null; response: unknown };

/** Idempotency keys of a company; src/db implements it. */
export interface IdempotencyRepository {
  /** Takes the key for a new request, or returns what is stored under it. */
  claim(
    companyId: string,
    key: string,
    requestHash: string,
    opts: { ttlHours: number; staleMinutes: number },
  ): Promise<{ claimed: true } | { claimed: false; record: IdempotencyRecord }>;
  complete(companyId: string, key: string, statusCode: number, response: unknown): Promise<void>;
  release(companyId: string, key: string): Promise<void>;
  purgeExpired(ttlHours: number): Promise<number>;
}
