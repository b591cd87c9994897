import { hash as digest, randomBytes } from 'node:crypto';

import { isUuid } from '../ids';
import { AppError, validationError } from '../errors';
import type { Principal } from '../principal';
import { createTokenCache, type RevocationWatch } from './token-cache';
import { createUsageRecorder, type TokenUse } from './usage-recorder';

/** Recognisable by secret scanners: `csk_` and 43 base64url characters (32 random bytes). */
export const TOKEN_PREFIX = 'csk_';
const TOKEN_PATTERN = /^csk_[A-Za-z0-9_-]{43}$/u;

/** One-shot hashing: no Hash object per request. */
const sha256 = (s: string) => digest('sha256', s, 'hex');

export type TokenRecord = {
  id: string;
  company_id: string;
  name: string;
  token_prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
};

/** What the token service needs from storage (the token repository implements it). */
export interface TokenStore {
  insert(t: { companyId: string; name: string; hash: string; prefix: string; createdByUserId: string | null }): Promise<TokenRecord>;
  /** The live (not revoked) token with this hash and its company. A read only. */
  authenticate(hash: string): Promise<{ tokenId: string; companyId: string; companyName: string } | undefined>;
  listByCompany(companyId: string): Promise<TokenRecord[]>;
  /** Revokes, and moves the revocation version in the same statement. */
  revoke(id: string, companyId: string | null): Promise<TokenRecord | undefined>;
  /** A value that changes whenever a token is revoked. */
  revocationVersion(): Promise<string>;
  /** Sets last use where the stored one is more than a minute older. */
  recordUses(uses: TokenUse[]): Promise<void>;
}

export type TokenServiceOptions = {
  store: { tokens: TokenStore; companies: { findById(id: string): Promise<unknown> } };
  /**
   * True when other processes share the database (PostgreSQL): tokens they revoke must be refused
   * here within a second, so cached tokens are trusted only while the revocation version is
   * confirmed. False for the embedded database, which one process alone opens.
   */
  sharedDatabase?: boolean;
  /** Told when last-use times could not be written (they are tried again). */
  onUsageError?: (err: unknown) => void;
};

export type PublicToken = Omit<TokenRecord, 'company_id'>;
const publicToken = ({ company_id: _c, ...t }: TokenRecord): PublicToken => t;

/** A verified token is served from memory for this long, then looked up again. */
export const TOKEN_CACHE_MS = 10_000;
const TOKEN_CACHE_ENTRIES = 10_000;
/** Other processes' revocations: the version is read this often, and the cache trusted this long after a read. */
export const REVOCATION_POLL_MS = 250;
export const REVOCATION_TRUST_MS = 800;
const REVOCATION_IDLE_MS = 30_000;
/** Last use is recorded at most once a minute per token, written in batches after this delay. */
const USAGE_GAP_MS = 60_000;
const USAGE_FLUSH_MS = 5_000;

export function createTokenService({ store, sharedDatabase = false, onUsageError }: TokenServiceOptions) {
  const revocations: RevocationWatch | undefined = sharedDatabase
    ? {
        version: () => store.tokens.revocationVersion(),
        pollMs: REVOCATION_POLL_MS,
        trustMs: REVOCATION_TRUST_MS,
        idleMs: REVOCATION_IDLE_MS,
      }
    : undefined;
  const cache = createTokenCache<Principal>({ ttlMs: TOKEN_CACHE_MS, maxEntries: TOKEN_CACHE_ENTRIES, revocations });
  const usage = createUsageRecorder({
    write: (uses) => store.tokens.recordUses(uses),
    flushMs: USAGE_FLUSH_MS,
    minGapMs: USAGE_GAP_MS,
    ...(onUsageError ? { onError: onUsageError } : {}),
  });

  /** Creates a token; the value is returned here once and never again (only its hash is kept). */
  async function create(companyId: string, name: unknown, createdByUserId: string | null = null) {
    if (typeof name !== 'string' || name.trim() === '') throw validationError({ name: ['The name field is required.'] });
    if (name.trim().length > 100) throw validationError({ name: ['The name field must not be greater than 100 characters.'] });
    if (!isUuid(companyId) || !(await store.companies.findById(companyId))) {
      throw new AppError('NOT_FOUND', 'Company not found.');
    }
    const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
    const record = await store.tokens.insert({
      companyId,
      name: name.trim(),
      hash: sha256(token),
      prefix: token.slice(0, TOKEN_PREFIX.length + 6),
      createdByUserId,
    });
    return { ...publicToken(record), token };
  }

  async function lookUp(hash: string): Promise<Principal | undefined> {
    const found = await store.tokens.authenticate(hash);
    return found && Object.freeze({ companyId: found.companyId, companyName: found.companyName, tokenId: found.tokenId, userId: null });
  }

  /**
   * Hashes of tokens found valid here lately (longer than the cache trusts them): not a proof of
   * validity (authenticate still decides), only whether a token from an address past its budget
   * of failed authentications is worth a database read.
   */
  const seenValid = new Set<string>();
  const SEEN_VALID_ENTRIES = 10_000;

  /** The principal of a bearer token, or undefined for a missing, malformed, unknown or revoked one. */
  async function authenticate(bearer: string | undefined): Promise<Principal | undefined> {
    if (!bearer || !TOKEN_PATTERN.test(bearer)) return undefined;
    const hash = sha256(bearer);
    const principal = await cache.get(hash, () => lookUp(hash));
    if (principal) {
      usage.touch(principal.tokenId!, principal.companyId);
      if (!seenValid.has(hash)) {
        if (seenValid.size >= SEEN_VALID_ENTRIES) seenValid.clear();
        seenValid.add(hash);
      }
    }
    return principal;
  }

  /** Whether this process has found the token valid before (see seenValid): no database read. */
  function seenValidBefore(bearer: string | undefined): boolean {
    return bearer !== undefined && TOKEN_PATTERN.test(bearer) && seenValid.has(sha256(bearer));
  }

  async function list(companyId: string): Promise<PublicToken[]> {
    await usage.flush();
    return (await store.tokens.listByCompany(companyId)).map(publicToken);
  }

  /** Revokes at once. With companyId, a token of another company is "not found". */
  async function revoke(id: string, companyId: string | null): Promise<PublicToken> {
    const record = isUuid(id) ? await store.tokens.revoke(id, companyId) : undefined;
    // This process refuses the token from now on; others within REVOCATION_TRUST_MS.
    cache.clear();
    if (!record) throw new AppError('NOT_FOUND', 'Token not found.');
    return publicToken(record);
  }

  /** Writes the noted last-use times and stops the background reads. */
  async function close(): Promise<void> {
    cache.close();
    await usage.flush();
  }

  return { create, authenticate, seenValidBefore, list, revoke, close };
}
export type TokenService = ReturnType<typeof createTokenService>;
