import type { SealedSecretsRepository, SealedValue } from '../domain/keys/reseal';
import { arrayLiteral } from './columns';
import type { Queryable } from './db';

/** The values sealed with ENCRYPTION_KEY: persons' TOTP keys and companies' SSO client secrets (reseal.ts). */
export function createSealedSecretsRepository(db: Queryable): SealedSecretsRepository {
  return {
    async lockAll(): Promise<SealedValue[]> {
      const users = db.query<{ id: string; sealed: string }>(
        `SELECT id::text, totp_secret_sealed AS sealed FROM users WHERE totp_secret_sealed IS NOT NULL FOR UPDATE`,
      );
      const sso = db.query<{ id: string; sealed: string }>(
        `SELECT company_id::text AS id, client_secret_sealed AS sealed FROM company_sso FOR UPDATE`,
      );
      return [
        ...(await users).map((r): SealedValue => ({ kind: 'totp', id: r.id, sealed: r.sealed })),
        ...(await sso).map((r): SealedValue => ({ kind: 'sso', id: r.id, sealed: r.sealed })),
      ];
    },
    async replace(values) {
      const of = (kind: SealedValue['kind']) => values.filter((v) => v.kind === kind);
      const params = (vs: typeof values) => [
        arrayLiteral(vs, (v) => v.id),
        arrayLiteral(vs, (v) => v.sealed),
        arrayLiteral(vs, (v) => v.resealed),
      ];
      const [users, sso] = await Promise.all([
        db.query<{ n: number }>(
          `WITH done AS (
             UPDATE users u SET totp_secret_sealed = t.resealed
               FROM unnest($1::text::uuid[], $2::text::text[], $3::text::text[]) AS t(id, sealed, resealed)
              WHERE u.id = t.id AND u.totp_secret_sealed = t.sealed
             RETURNING 1)
           SELECT count(*)::int AS n FROM done`,
          params(of('totp')),
        ),
        db.query<{ n: number }>(
          `WITH done AS (
             UPDATE company_sso s SET client_secret_sealed = t.resealed
               FROM unnest($1::text::uuid[], $2::text::text[], $3::text::text[]) AS t(id, sealed, resealed)
              WHERE s.company_id = t.id AND s.client_secret_sealed = t.sealed
             RETURNING 1)
           SELECT count(*)::int AS n FROM done`,
          params(of('sso')),
        ),
      ]);
      return users[0]!.n + sso[0]!.n;
    },
  };
}
