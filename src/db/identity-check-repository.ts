import type { IdentityCheckLog } from '../domain/clients/identity-checks';
import { arrayLiteral } from './columns';
import type { Queryable } from './db';

/**
 * Identity checks in the look-up log (migration 0019): kind 'identity_check', result count 1, no
 * claim, plate or client id; the persons whose documents were matched in the internal keys
 * (client_key, other_client_key), found by the subject access export only.
 */
export function createIdentityCheckRepository(db: Queryable): IdentityCheckLog {
  return {
    async countSince(companyIds, since) {
      if (companyIds.length === 0) return new Map();
      const rows = await db.query<{ company_id: string; n: number }>(
        `SELECT l.company_id, count(*)::int AS n
           FROM lookups l
          WHERE l.kind = 'identity_check' AND l.company_id = ANY ($1::text::uuid[]) AND l.created_at >= to_timestamp($2::bigint / 1000.0)
          GROUP BY l.company_id`,
        [arrayLiteral(companyIds, (id) => id), since],
      );
      return new Map(rows.map((r) => [r.company_id, r.n]));
    },

    async append(checks) {
      if (checks.length === 0) return;
      // One statement for all of them. A company deleted meanwhile takes its entries with it.
      await db.query(
        `INSERT INTO lookups (id, company_id, token_id, user_id, kind, result_count, created_at, client_key, other_client_key)
         SELECT t.id, t.company_id, t.token_id, t.user_id, 'identity_check', 1, to_timestamp(t.at / 1000.0), t.client_key, t.other_client_key
           FROM ROWS FROM (unnest($1::text::uuid[]), unnest($2::text::uuid[]), unnest($3::text::uuid[]), unnest($4::text::uuid[]),
                           unnest($5::text::bigint[]), unnest($6::text::uuid[]), unnest($7::text::uuid[]))
                AS t(id, company_id, token_id, user_id, at, client_key, other_client_key)
          WHERE EXISTS (SELECT 1 FROM companies co WHERE co.id = t.company_id)`,
        [
          arrayLiteral(checks, (c) => c.id),
          arrayLiteral(checks, (c) => c.companyId),
          arrayLiteral(checks, (c) => c.tokenId),
          arrayLiteral(checks, (c) => c.userId),
          arrayLiteral(checks, (c) => String(c.at)),
          arrayLiteral(checks, (c) => c.clientIds[0] ?? null),
          arrayLiteral(checks, (c) => c.clientIds[1] ?? null),
        ],
      );
    },
  };
}
