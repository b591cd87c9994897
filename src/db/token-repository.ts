import type { Queryable } from './db';

const TS = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"')`;

export type TokenRecord = {
  id: string;
  company_id: string;
  name: string;
  token_prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
};

const TOKEN_COLUMNS = `id, company_id, name, token_prefix, ${TS('created_at')} AS created_at,
  ${TS('last_used_at')} AS last_used_at, ${TS('revoked_at')} AS revoked_at`;

export function createTokenRepository(db: Queryable) {
  return {
    async insert(t: { companyId: string; name: string; hash: string; prefix: string; createdByUserId: string | null }): Promise<TokenRecord> {
      const rows = await db.query<TokenRecord>(
        `INSERT INTO api_tokens (company_id, name, token_hash, token_prefix, created_by_user_id)
         VALUES ($1, $2, $3, $4, $5) RETURNING ${TOKEN_COLUMNS}`,
        [t.companyId, t.name, t.hash, t.prefix, t.createdByUserId],
      );
      return rows[0]!;
    },

    /**
     * Finds the live token with this hash and its company, and records its use, in one round
     * trip. last_used_at is written at most once a minute per token so reads stay reads.
     */
    async authenticate(hash: string): Promise<{ tokenId: string; companyId: string; companyName: string } | undefined> {
      const rows = await db.query<{ id: string; company_id: string; company_name: string }>(
        `WITH t AS (
           SELECT t.id, t.company_id, co.name AS company_name, t.last_used_at
             FROM api_tokens t JOIN companies co ON co.id = t.company_id
            WHERE t.token_hash = $1 AND t.revoked_at IS NULL
         ), touched AS (
           UPDATE api_tokens SET last_used_at = now()
            WHERE id = (SELECT id FROM t) AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
         )
         SELECT id, company_id, company_name FROM t`,
        [hash],
      );
      const r = rows[0];
      return r && { tokenId: r.id, companyId: r.company_id, companyName: r.company_name };
    },

    async listByCompany(companyId: string): Promise<TokenRecord[]> {
      return db.query<TokenRecord>(
        `SELECT ${TOKEN_COLUMNS} FROM api_tokens WHERE company_id = $1 ORDER BY created_at DESC, id DESC LIMIT 500`,
        [companyId],
      );
    },

    /** Revokes a token; with companyId, only one of that company (another company's id is "not found"). */
    async revoke(id: string, companyId: string | null): Promise<TokenRecord | undefined> {
      const rows = await db.query<TokenRecord>(
        `UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now())
          WHERE id = $1 AND ($2::uuid IS NULL OR company_id = $2)
         RETURNING ${TOKEN_COLUMNS}`,
        [id, companyId],
      );
      return rows[0];
    },
  };
}
export type TokenRepository = ReturnType<typeof createTokenRepository>;
