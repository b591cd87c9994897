import type { TokenScope } from '../domain/tokens/scopes';
import type { TokenGrant, TokenRecord, TokenRepositoryPort } from '../domain/tokens/token-service';
import type { TokenUse } from '../domain/tokens/usage-recorder';
import { newId } from '../domain/ids';
import type { Queryable } from './db';
import { isoTime } from './columns';

export type { TokenRecord };

/**
 * app_meta key of the revocation version: a counter moved by every revocation, suspension and
 * resumption of a company (other processes then drop their cached tokens).
 */
export const REVOCATION_VERSION_KEY = 'api_token_revocation_version';

/** A CTE that moves the revocation version when `source` has rows (append to a WITH list). */
export const bumpRevocationVersion = (source: string, param: string) =>
  `INSERT INTO app_meta (key, value) SELECT ${param}, '1' WHERE EXISTS (SELECT 1 FROM ${source})
   ON CONFLICT (key) DO UPDATE SET value = (app_meta.value::bigint + 1)::text`;

const TOKEN_COLUMNS = `id, company_id, name, token_prefix, token_last4, scopes, ${isoTime('created_at')} AS created_at,
  ${isoTime('expires_at')} AS expires_at, ${isoTime('last_used_at')} AS last_used_at, ${isoTime('revoked_at')} AS revoked_at, created_by_user_id`;

export function createTokenRepository(db: Queryable): TokenRepositoryPort {
  return {
    async insert(t: {
      companyId: string;
      name: string;
      hash: string;
      prefix: string;
      last4: string;
      scopes: TokenScope[];
      expiresAt: string | null;
      createdByUserId: string | null;
    }): Promise<TokenRecord> {
      const rows = await db.query<TokenRecord>(
        `INSERT INTO api_tokens (id, company_id, name, token_hash, token_prefix, token_last4, scopes, expires_at, created_by_user_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7::text[], $8::timestamptz, $9) RETURNING ${TOKEN_COLUMNS}`,
        [newId(), t.companyId, t.name, t.hash, t.prefix, t.last4, t.scopes, t.expiresAt, t.createdByUserId],
      );
      return rows[0]!;
    },

    /**
     * The live token with this hash, its company, scopes, expiry and whether the company is
     * suspended: one indexed read (last use is recorded in batches, see recordUses).
     */
    async unrevokedHashes(): Promise<string[]> {
      const rows = await db.query<{ token_hash: string }>('SELECT token_hash FROM api_tokens WHERE revoked_at IS NULL');
      return rows.map((r) => r.token_hash);
    },
    async authenticate(hash: string): Promise<TokenGrant | undefined> {
      const rows = await db.query<{
        id: string;
        name: string;
        company_id: string;
        company_name: string;
        scopes: TokenScope[];
        expires_ms: string | null;
        suspended: boolean;
      }>(
        `SELECT t.id, t.name, t.company_id, co.name AS company_name, t.scopes,
                (extract(epoch FROM t.expires_at) * 1000)::bigint::text AS expires_ms, co.suspended_at IS NOT NULL AS suspended
           FROM api_tokens t JOIN companies co ON co.id = t.company_id
          WHERE t.token_hash = $1 AND t.revoked_at IS NULL`,
        [hash],
      );
      const r = rows[0];
      return (
        r && {
          tokenId: r.id,
          tokenName: r.name,
          companyId: r.company_id,
          companyName: r.company_name,
          scopes: r.scopes,
          expiresAt: r.expires_ms === null ? null : Number(r.expires_ms),
          suspended: r.suspended,
        }
      );
    },

    /**
     * Last use of several tokens in one statement. A stored time less than a minute older than the
     * new one is kept, so last use moves at most once a minute, as before batching.
     */
    async recordUses(uses: TokenUse[]): Promise<void> {
      if (uses.length === 0) return;
      await db.query(
        `UPDATE api_tokens t SET last_used_at = u.used_at
           FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[]) AS u(id, company_id, used_at)
          WHERE t.id = u.id AND t.company_id = u.company_id
            AND (t.last_used_at IS NULL OR t.last_used_at < u.used_at - interval '1 minute')`,
        [uses.map((u) => u.tokenId), uses.map((u) => u.companyId), uses.map((u) => u.usedAt.toISOString())],
      );
    },

    /** Changes whenever a token is revoked (see revoke): other processes drop their cached tokens then. */
    async revocationVersion(): Promise<string> {
      const rows = await db.query<{ value: string }>('SELECT value FROM app_meta WHERE key = $1', [REVOCATION_VERSION_KEY]);
      return rows[0]?.value ?? '0';
    },

    async listByCompany(companyId: string): Promise<TokenRecord[]> {
      return db.query<TokenRecord>(
        `SELECT ${TOKEN_COLUMNS} FROM api_tokens WHERE company_id = $1 ORDER BY created_at DESC, id DESC LIMIT 500`,
        [companyId],
      );
    },

    /**
     * Revokes a token; with companyId, only one of that company (another company's id is "not
     * found"). The revocation version moves in the same statement, so no process can see the
     * revocation without the new version or the other way round.
     */
    async revoke(id: string, companyId: string | null): Promise<TokenRecord | undefined> {
      const rows = await db.query<TokenRecord>(
        `WITH revoked AS (
           UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now())
            WHERE id = $1 AND ($2::uuid IS NULL OR company_id = $2)
           RETURNING ${TOKEN_COLUMNS}
         ), version AS (${bumpRevocationVersion('revoked', '$3')})
         SELECT * FROM revoked`,
        [id, companyId, REVOCATION_VERSION_KEY],
      );
      return rows[0];
    },
  };
}
export type TokenRepository = ReturnType<typeof createTokenRepository>;
