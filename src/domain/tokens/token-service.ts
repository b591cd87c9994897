import { hash as digest } from 'node:crypto';

import type { Actor } from '../access/access';
import type { AuditActor, AuditOrigin, AuditRepository } from '../audit/audit';
import { CLI_ACTOR, NO_ORIGIN } from '../audit/audit';
import { isUuid } from '../ids';
import { AppError, validationError, type FieldErrors } from '../errors';
import type { Principal } from '../principal';
import { isTokenScope, TOKEN_SCOPES, type TokenScope } from './scopes';
import { createTokenCache, type RevocationWatch } from './token-cache';
import { displayPrefix, isOldFormatToken, isWellFormedToken, lastFour, newTokenValue, TOKEN_PREFIX } from './token-format';
import { createUsageRecorder, type TokenUse } from './usage-recorder';

export { TOKEN_PREFIX };

/** One-shot hashing: no Hash object per request. */
const sha256 = (s: string) => digest('sha256', s, 'hex');

export type TokenRecord = {
  id: string;
  company_id: string;
  name: string;
  token_prefix: string;
  /** The value's last 4 characters (lists show `csk_…abcd`); null for a token made before they were kept. */
  token_last4: string | null;
  scopes: TokenScope[];
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
  created_by_user_id: string | null;
};

/** A live token as authentication sees it. */
export type TokenGrant = {
  tokenId: string;
  tokenName: string;
  companyId: string;
  companyName: string;
  scopes: TokenScope[];
  /** Milliseconds since the epoch, or null: never expires. */
  expiresAt: number | null;
  suspended: boolean;
};

/** What the token service needs from storage (the token repository implements it). */
export interface TokenRepositoryPort {
  insert(t: {
    companyId: string;
    name: string;
    hash: string;
    prefix: string;
    last4: string;
    scopes: TokenScope[];
    expiresAt: string | null;
    createdByUserId: string | null;
  }): Promise<TokenRecord>;
  /** The hashes of every token not revoked (the old-format candidates, read when the service starts). */
  unrevokedHashes(): Promise<string[]>;
  /** The live (not revoked) token with this hash and its company. A read only. */
  authenticate(hash: string): Promise<TokenGrant | undefined>;
  listByCompany(companyId: string): Promise<TokenRecord[]>;
  /** Revokes, and moves the revocation version in the same statement. */
  revoke(id: string, companyId: string | null): Promise<TokenRecord | undefined>;
  /** A value that changes whenever a token is revoked or a company suspended or resumed. */
  revocationVersion(): Promise<string>;
  /** Sets last use where the stored one is more than a minute older. */
  recordUses(uses: TokenUse[]): Promise<void>;
}

type TokenTx = { tokens: TokenRepositoryPort; audit: Pick<AuditRepository, 'record'> };

export type TokenServiceOptions = {
  repos: {
    tokens: TokenRepositoryPort;
    companies: { findById(id: string): Promise<unknown> };
    transaction<T>(fn: (tx: TokenTx) => Promise<T>): Promise<T>;
  };
  /**
   * True when other processes share the database (PostgreSQL): tokens they revoke must be refused
   * here within a second, so cached tokens are trusted only while the revocation version is
   * confirmed. False for the embedded database, which one process alone opens.
   */
  sharedDatabase?: boolean;
  /** Told when last-use times could not be written (they are tried again). */
  onUsageError?: (err: unknown) => void;
  /** TOKEN_MAX_LIFETIME_DAYS: the longest lifetime of a new token; 0 = no limit. */
  maxLifetimeDays?: number;
  /** The clock (tests set it): expiry is decided against it. */
  now?: () => number;
};

export type PublicToken = Omit<TokenRecord, 'company_id' | 'created_by_user_id'>;
const publicToken = ({ company_id: _c, created_by_user_id: _u, ...t }: TokenRecord): PublicToken => t;

/** How long a new token lives: days from now, until a date (YYYY-MM-DD, through that day, UTC), or never. */
export type TokenLifetime = { days: number } | { until: string } | 'never';

export type CreateTokenOptions = {
  /** Default: every scope (the command line's default). */
  scopes?: unknown;
  /** Default: 90 days (or TOKEN_MAX_LIFETIME_DAYS when shorter). */
  lifetime?: TokenLifetime;
  /** Who made it (the audit event's actor; default: the command line) and from where. */
  actor?: AuditActor;
  origin?: AuditOrigin;
};

/** Refusals of authentication, each with its own answer. */
export type TokenCheck =
  | { ok: true; principal: Principal & { tokenId: string; tokenName: string; scopes: TokenScope[] }; actor: Actor & { type: 'token' } }
  | { ok: false; reason: 'unauthenticated' | 'token_expired' };

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
export const DEFAULT_TOKEN_LIFETIME_DAYS = 90;
/** Lists flag tokens that expire within this many days. */
export const TOKEN_EXPIRY_WARNING_DAYS = 7;
const DAY_MS = 86_400_000;

export const tokenMessages = {
  scopes: 'Choose at least one scope.',
  unknownScope: (s: string) => `The scope ${s} is not one of ${TOKEN_SCOPES.join(', ')}.`,
  expiry: 'Choose when the token expires.',
  expiryPast: 'The expiry date must be after today.',
  tooLong: (max: number) => `A token may live at most ${max} days (TOKEN_MAX_LIFETIME_DAYS).`,
  never: (max: number) => `Every token must expire, within ${max} days (TOKEN_MAX_LIFETIME_DAYS).`,
} as const;

function parseScopes(raw: unknown): TokenScope[] {
  if (raw === undefined) return [...TOKEN_SCOPES];
  const list: unknown[] = Array.isArray(raw) ? (raw as unknown[]) : typeof raw === 'string' ? raw.split(',').map((s) => s.trim()) : [];
  const scopes = list.filter((s) => s !== '');
  if (scopes.length === 0) throw validationError({ scopes: [tokenMessages.scopes] });
  const unknown = scopes.find((s) => !isTokenScope(s));
  if (unknown !== undefined)
    throw validationError({ scopes: [tokenMessages.unknownScope(typeof unknown === 'string' ? unknown.slice(0, 40) : typeof unknown)] });
  return TOKEN_SCOPES.filter((s) => scopes.includes(s));
}

export function createTokenService({
  repos,
  sharedDatabase = false,
  onUsageError,
  maxLifetimeDays = 366,
  now = Date.now,
}: TokenServiceOptions) {
  const revocations: RevocationWatch | undefined = sharedDatabase
    ? {
        version: () => repos.tokens.revocationVersion(),
        pollMs: REVOCATION_POLL_MS,
        trustMs: REVOCATION_TRUST_MS,
        idleMs: REVOCATION_IDLE_MS,
      }
    : undefined;
  const cache = createTokenCache<TokenGrant>({ ttlMs: TOKEN_CACHE_MS, maxEntries: TOKEN_CACHE_ENTRIES, revocations });
  const usage = createUsageRecorder({
    write: (uses) => repos.tokens.recordUses(uses),
    flushMs: USAGE_FLUSH_MS,
    minGapMs: USAGE_GAP_MS,
    ...(onUsageError ? { onError: onUsageError } : {}),
  });

  /** 90 days, or the maximum when that is shorter (a default, not a request: nothing is refused). */
  const defaultLifetimeDays = maxLifetimeDays > 0 ? Math.min(DEFAULT_TOKEN_LIFETIME_DAYS, maxLifetimeDays) : DEFAULT_TOKEN_LIFETIME_DAYS;

  /** When a token of this lifetime made now expires (ISO 8601), or null; refuses what TOKEN_MAX_LIFETIME_DAYS forbids. */
  function expiryOf(lifetime: TokenLifetime): string | null {
    const at = now();
    if (lifetime === 'never') {
      if (maxLifetimeDays > 0) throw validationError({ expires: [tokenMessages.never(maxLifetimeDays)] });
      return null;
    }
    if ('days' in lifetime) {
      if (!Number.isInteger(lifetime.days) || lifetime.days < 1) throw validationError({ expires: [tokenMessages.expiry] });
      if (maxLifetimeDays > 0 && lifetime.days > maxLifetimeDays)
        throw validationError({ expires: [tokenMessages.tooLong(maxLifetimeDays)] });
      return new Date(at + lifetime.days * DAY_MS).toISOString();
    }
    const day = Date.parse(`${lifetime.until}T00:00:00Z`);
    if (!/^\d{4}-\d{2}-\d{2}$/u.test(lifetime.until) || Number.isNaN(day)) throw validationError({ expires: [tokenMessages.expiry] });
    const todayStart = at - (at % DAY_MS);
    if (day < todayStart + DAY_MS) throw validationError({ expires: [tokenMessages.expiryPast] });
    if (maxLifetimeDays > 0 && day > todayStart + maxLifetimeDays * DAY_MS) {
      throw validationError({ expires: [tokenMessages.tooLong(maxLifetimeDays)] });
    }
    // Through the chosen day (UTC): it expires when the next day starts.
    return new Date(day + DAY_MS).toISOString();
  }

  /**
   * Creates a token; the value is returned here once and never again (only its hash is kept).
   * The token and its audit event `token.created` are one transaction.
   */
  async function create(companyId: string, name: unknown, createdByUserId: string | null = null, opts: CreateTokenOptions = {}) {
    // Every field's problem at once, name first (the form shows each next to its field).
    const errors: FieldErrors = {};
    if (typeof name !== 'string' || name.trim() === '') errors.name = ['The name field is required.'];
    else if (name.trim().length > 100) errors.name = ['The name field must not be greater than 100 characters.'];
    const fieldOf = <T>(f: () => T): T | undefined => {
      try {
        return f();
      } catch (err) {
        if (!(err instanceof AppError) || !err.fields) throw err;
        Object.assign(errors, err.fields);
        return undefined;
      }
    };
    const scopes = fieldOf(() => parseScopes(opts.scopes));
    const expiresAt = fieldOf(() => expiryOf(opts.lifetime ?? { days: defaultLifetimeDays }));
    if (Object.keys(errors).length > 0 || typeof name !== 'string' || !scopes || expiresAt === undefined) throw validationError(errors);
    if (!isUuid(companyId) || !(await repos.companies.findById(companyId))) {
      throw new AppError('NOT_FOUND', 'Company not found.');
    }
    const token = newTokenValue();
    const origin = opts.origin ?? NO_ORIGIN;
    const record = await repos.transaction(async (tx) => {
      const r = await tx.tokens.insert({
        companyId,
        name: name.trim(),
        hash: sha256(token),
        prefix: displayPrefix(token),
        last4: lastFour(token),
        scopes,
        expiresAt,
        createdByUserId,
      });
      await tx.audit.record({
        companyId,
        action: 'token.created',
        actor: opts.actor ?? CLI_ACTOR,
        target: { type: 'token', id: r.id, name: r.name },
        ip: origin.ip,
        requestId: origin.requestId,
      });
      return r;
    });
    return { ...publicToken(record), token };
  }

  /**
   * What a bearer token may do: its principal, or why it is refused. A missing or malformed
   * token, or one whose checksum fails, is refused before any database read; a verified one is
   * served from memory (revocations, suspensions and expiry still apply within a second).
   */
  /**
   * Hashes of tokens found valid here lately (longer than the cache trusts them): not a proof of
   * validity (check still decides), only whether a token from an address past its budget of
   * failed authentications is worth a database read.
   */
  const seenValid = new Set<string>();
  const SEEN_VALID_ENTRIES = 10_000;

  /**
   * The tokens that may be of the old format (DECISIONS, "Old token format"): the hashes of every
   * token not revoked when the service started. No token of that format is made any more, so the
   * set is complete from then on; a hash the database no longer knows is dropped from it. A string
   * of the old shape that is not in it is refused as a checksum failure is, without a database
   * read. Until it is loaded (loadOldFormat, at the server's start), such strings are looked up.
   */
  let oldFormat: Set<string> | undefined;
  async function loadOldFormat(): Promise<void> {
    oldFormat = new Set(await repos.tokens.unrevokedHashes());
  }

  async function check(bearer: string | undefined): Promise<TokenCheck> {
    if (!bearer || !isWellFormedToken(bearer)) return { ok: false, reason: 'unauthenticated' };
    const hash = sha256(bearer);
    if (oldFormat && !oldFormat.has(hash) && isOldFormatToken(bearer)) return { ok: false, reason: 'unauthenticated' };
    const grant = await cache.get(hash, () => repos.tokens.authenticate(hash));
    if (!grant) {
      oldFormat?.delete(hash);
      return { ok: false, reason: 'unauthenticated' };
    }
    if (grant.expiresAt !== null && grant.expiresAt <= now()) return { ok: false, reason: 'token_expired' };
    usage.touch(grant.tokenId, grant.companyId);
    if (!seenValid.has(hash)) {
      if (seenValid.size >= SEEN_VALID_ENTRIES) seenValid.clear();
      seenValid.add(hash);
    }
    return {
      ok: true,
      // Whether a suspended company's token may do anything is access.ts's decision.
      actor: {
        type: 'token',
        id: grant.tokenId,
        name: grant.tokenName,
        companyId: grant.companyId,
        scopes: grant.scopes,
        companySuspended: grant.suspended,
      },
      principal: {
        companyId: grant.companyId,
        companyName: grant.companyName,
        tokenId: grant.tokenId,
        tokenName: grant.tokenName,
        scopes: grant.scopes,
        userId: null,
      },
    };
  }

  /** Whose a bearer token is, or undefined for a missing, malformed, unknown, revoked or expired one (what it may do: access.ts). */
  async function authenticate(bearer: string | undefined): Promise<Principal | undefined> {
    const r = await check(bearer);
    return r.ok ? r.principal : undefined;
  }

  /** Whether this process has found the token valid before (see seenValid): no database read. */
  function seenValidBefore(bearer: string | undefined): boolean {
    return bearer !== undefined && isWellFormedToken(bearer) && seenValid.has(sha256(bearer));
  }

  async function list(companyId: string): Promise<PublicToken[]> {
    await usage.flush();
    return (await repos.tokens.listByCompany(companyId)).map(publicToken);
  }

  /** Revokes at once, with its audit event in the same transaction. With companyId, a token of another company is "not found". */
  async function revoke(id: string, companyId: string | null, by: { actor?: AuditActor; origin?: AuditOrigin } = {}): Promise<PublicToken> {
    const origin = by.origin ?? NO_ORIGIN;
    const record = isUuid(id)
      ? await repos.transaction(async (tx) => {
          const r = await tx.tokens.revoke(id, companyId);
          if (r) {
            await tx.audit.record({
              companyId: r.company_id,
              action: 'token.revoked',
              actor: by.actor ?? CLI_ACTOR,
              target: { type: 'token', id: r.id, name: r.name },
              ip: origin.ip,
              requestId: origin.requestId,
            });
          }
          return r;
        })
      : undefined;
    // This process refuses the token from now on; others within REVOCATION_TRUST_MS.
    cache.clear();
    if (!record) throw new AppError('NOT_FOUND', 'Token not found.');
    return publicToken(record);
  }

  /** Tokens expiring within TOKEN_EXPIRY_WARNING_DAYS (for the dashboard's flag). */
  const expiresSoon = (t: { expires_at: string | null; revoked_at: string | null }): boolean =>
    t.revoked_at === null && t.expires_at !== null && Date.parse(t.expires_at) - now() <= TOKEN_EXPIRY_WARNING_DAYS * DAY_MS;
  const isExpired = (t: { expires_at: string | null }): boolean => t.expires_at !== null && Date.parse(t.expires_at) <= now();
  /**
   * The other active tokens (neither revoked nor expired) of a list with the same name as `token`,
   * case aside: a name in use is allowed, and the dashboard says so.
   */
  const namesakes = <T extends { id: string; name: string; expires_at: string | null; revoked_at: string | null }>(
    list: T[],
    token: T,
  ): T[] =>
    list.filter(
      (t) =>
        t.id !== token.id &&
        t.revoked_at === null &&
        !isExpired(t) &&
        t.name.toLocaleLowerCase('en') === token.name.toLocaleLowerCase('en'),
    );

  /** Writes the noted last-use times and stops the background reads. */
  async function close(): Promise<void> {
    cache.close();
    await usage.flush();
  }

  return {
    create,
    check,
    authenticate,
    seenValidBefore,
    loadOldFormat,
    list,
    revoke,
    close,
    expiresSoon,
    isExpired,
    namesakes,
    /** Forget cached tokens (this process revoked tokens or suspended a company by other means). */
    forget: () => cache.clear(),
    maxLifetimeDays,
    defaultLifetimeDays,
  };
}
export type TokenService = ReturnType<typeof createTokenService>;
