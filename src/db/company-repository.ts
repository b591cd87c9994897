import type { CompanyRecord, CompanyRepository, UserRecord, UserRole } from '../domain/companies/company-repository';
import type { Queryable } from './db';
import { isoTime } from './columns';

const USER_COLUMNS = `id, company_id, email, role, ${isoTime('created_at')} AS created_at`;

export function createCompanyRepository(db: Queryable): CompanyRepository {
  return {
    async insert(name: string): Promise<CompanyRecord | undefined> {
      const rows = await db.query<CompanyRecord>(
        `INSERT INTO companies (name) VALUES ($1) ON CONFLICT DO NOTHING RETURNING id, name, ${isoTime('created_at')} AS created_at`,
        [name],
      );
      return rows[0];
    },
    async list(): Promise<CompanyRecord[]> {
      return db.query<CompanyRecord>(
        `SELECT id, name, ${isoTime('created_at')} AS created_at FROM companies ORDER BY lower(name) LIMIT 1000`,
      );
    },
    async findById(id: string): Promise<CompanyRecord | undefined> {
      const rows = await db.query<CompanyRecord>(`SELECT id, name, ${isoTime('created_at')} AS created_at FROM companies WHERE id = $1`, [
        id,
      ]);
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
  };
}
