import type { CompanyLimits, CompanyRecord, CompanyRepository, UserRecord, UserRole } from '../domain/companies/company-repository';
import type { Queryable } from './db';
import { isoTime } from './columns';
import { bumpRevocationVersion, REVOCATION_VERSION_KEY } from './token-repository';

const USER_COLUMNS = `id, company_id, email, role, ${isoTime('created_at')} AS created_at`;
const COMPANY_COLUMNS = `id, name, ${isoTime('created_at')} AS created_at, ${isoTime('suspended_at')} AS suspended_at`;

export function createCompanyRepository(db: Queryable): CompanyRepository {
  return {
    async insert(name: string): Promise<CompanyRecord | undefined> {
      const rows = await db.query<CompanyRecord>(
        `INSERT INTO companies (name) VALUES ($1) ON CONFLICT DO NOTHING RETURNING ${COMPANY_COLUMNS}`,
        [name],
      );
      return rows[0];
    },
    async list(): Promise<CompanyRecord[]> {
      return db.query<CompanyRecord>(`SELECT ${COMPANY_COLUMNS} FROM companies ORDER BY lower(name) LIMIT 1000`);
    },
    async findById(id: string): Promise<CompanyRecord | undefined> {
      const rows = await db.query<CompanyRecord>(`SELECT ${COMPANY_COLUMNS} FROM companies WHERE id = $1`, [id]);
      return rows[0];
    },

    async insertUser(u: {
      companyId: string | null;
      email: string;
      passwordHash: string;
      role: UserRole;
    }): Promise<UserRecord | undefined> {
      const rows = await db.query<UserRecord>(
        `INSERT INTO users (company_id, email, password_hash, role) VALUES ($1, $2, $3, $4)
         ON CONFLICT DO NOTHING RETURNING ${USER_COLUMNS}`,
        [u.companyId, u.email, u.passwordHash, u.role],
      );
      return rows[0];
    },
    async findUserByEmail(email: string): Promise<(UserRecord & { password_hash: string }) | undefined> {
      const rows = await db.query<UserRecord & { password_hash: string }>(
        `SELECT ${USER_COLUMNS}, password_hash FROM users WHERE lower(email) = lower($1)`,
        [email],
      );
      return rows[0];
    },
    async findUserById(id: string): Promise<UserRecord | undefined> {
      const rows = await db.query<UserRecord>(`SELECT ${USER_COLUMNS} FROM users WHERE id = $1`, [id]);
      return rows[0];
    },
    async listUsers(companyId: string | null): Promise<UserRecord[]> {
      return db.query<UserRecord>(
        `SELECT ${USER_COLUMNS} FROM users WHERE company_id IS NOT DISTINCT FROM $1 ORDER BY lower(email) LIMIT 1000`,
        [companyId],
      );
    },
    /** Deletes a person; with companyId, only one of that company. */
    async deleteUser(id: string, companyId: string | null): Promise<boolean> {
      const rows = await db.query<{ id: string }>(
        `DELETE FROM users WHERE id = $1 AND ($2::uuid IS NULL OR company_id = $2) RETURNING id`,
        [id, companyId],
      );
      return rows.length > 0;
    },
    async rateLimits(): Promise<Map<string, CompanyLimits>> {
      const rows = await db.query<{ company_id: string; per_minute: number | null; company_per_minute: number | null }>(
        'SELECT company_id, per_minute, company_per_minute FROM company_rate_limits',
      );
      return new Map(rows.map((r) => [r.company_id, { perToken: r.per_minute, perCompany: r.company_per_minute }]));
    },
    async setRateLimits(companyId: string, limits: Partial<CompanyLimits>): Promise<CompanyLimits> {
      // A limit left out keeps its value; null is the setting's default.
      const rows = await db.query<{ per_minute: number | null; company_per_minute: number | null }>(
        `INSERT INTO company_rate_limits AS l (company_id, per_minute, company_per_minute) VALUES ($1, $2, $3)
         ON CONFLICT (company_id) DO UPDATE
           SET per_minute = CASE WHEN $4::boolean THEN EXCLUDED.per_minute ELSE l.per_minute END,
               company_per_minute = CASE WHEN $5::boolean THEN EXCLUDED.company_per_minute ELSE l.company_per_minute END,
               updated_at = now()
         RETURNING per_minute, company_per_minute`,
        [companyId, limits.perToken ?? null, limits.perCompany ?? null, limits.perToken !== undefined, limits.perCompany !== undefined],
      );
      return { perToken: rows[0]!.per_minute, perCompany: rows[0]!.company_per_minute };
    },

    async setRole(id, companyId, role) {
      const rows = await db.query<UserRecord & { previous_role: UserRole }>(
        `UPDATE users u SET role = $3 FROM (SELECT id, role FROM users WHERE id = $1 AND company_id = $2 FOR UPDATE) old
          WHERE u.id = old.id
          RETURNING u.id, u.company_id, u.email, u.role, ${isoTime('u.created_at')} AS created_at, old.role AS previous_role`,
        [id, companyId, role],
      );
      return rows[0];
    },

    async setSuspended(id, suspended) {
      const rows = await db.query<CompanyRecord>(
        `WITH changed AS (
           UPDATE companies SET suspended_at = CASE WHEN $2::boolean THEN coalesce(suspended_at, now()) END
            WHERE id = $1 RETURNING ${COMPANY_COLUMNS}
         ), version AS (${bumpRevocationVersion('changed', '$3')}),
         signed_out AS (
           DELETE FROM web_sessions s USING users u
            WHERE $2::boolean AND s.user_id = u.id AND u.company_id IN (SELECT id FROM changed)
         )
         SELECT * FROM changed`,
        [id, suspended, REVOCATION_VERSION_KEY],
      );
      return rows[0];
    },

    async madeBy(userId, companyId) {
      const [tokens, webhooks] = [
        await db.query<{ id: string; name: string }>(
          `SELECT id, name FROM api_tokens WHERE created_by_user_id = $1 AND company_id = $2 AND revoked_at IS NULL
            ORDER BY created_at, id`,
          [userId, companyId],
        ),
        await db.query<{ id: string; url: string }>(
          'SELECT id, url FROM webhook_endpoints WHERE created_by_user_id = $1 AND company_id = $2 ORDER BY created_at, id',
          [userId, companyId],
        ),
      ];
      return { tokens, webhooks };
    },

    async handOver(userId, companyId, heirId, keepTokens) {
      return db.query<{ id: string; name: string }>(
        `WITH revoked AS (
           UPDATE api_tokens SET revoked_at = now()
            WHERE NOT $4::boolean AND created_by_user_id = $1 AND company_id = $2 AND revoked_at IS NULL
           RETURNING id, name
         ), kept AS (
           UPDATE api_tokens SET created_by_user_id = $3::uuid
            WHERE $4::boolean AND created_by_user_id = $1 AND company_id = $2
         ), hooks AS (
           UPDATE webhook_endpoints SET created_by_user_id = $3::uuid WHERE created_by_user_id = $1 AND company_id = $2
         ), version AS (${bumpRevocationVersion('revoked', '$5')})
         SELECT id, name FROM revoked ORDER BY name, id`,
        [userId, companyId, heirId, keepTokens, REVOCATION_VERSION_KEY],
      );
    },
  };
}
