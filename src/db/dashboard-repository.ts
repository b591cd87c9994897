import type { ClaimStatus } from '../domain/claims/claim';
import type { UserRole } from '../domain/companies/company-repository';
import type { DashboardRepository, SignedInUser } from '../domain/dashboard/dashboard-repository';
import { visibleClaim } from './claim-visibility';
import type { Queryable } from './db';

/** Read-only queries behind the dashboard pages: one statement each, grouped in SQL. */
export function createDashboardRepository(db: Queryable): DashboardRepository {
  return {
    /** A person and their company's name in one round trip (the per-request "who is signed in"). */
    async findSignedInUser(userId: string): Promise<SignedInUser | undefined> {
      const rows = await db.query<{ id: string; email: string; role: UserRole; company_id: string | null; company_name: string | null }>(
        `SELECT u.id, u.email, u.role, u.company_id, co.name AS company_name
           FROM users u LEFT JOIN companies co ON co.id = u.company_id
          WHERE u.id = $1`,
        [userId],
      );
      const r = rows[0];
      return r && { id: r.id, email: r.email, role: r.role, companyId: r.company_id, companyName: r.company_name };
    },

    /** Claims of a company per calendar month of claim_date, from fromDate (a month's first day) to toDate. */
    async claimsPerMonth(companyId: string, fromDate: string, toDate: string): Promise<{ month: string; claims: number }[]> {
      const rows = await db.query<{ month: string; claims: number }>(
        `SELECT to_char(date_trunc('month', claim_date), 'YYYY-MM') AS month, count(*)::int AS claims
           FROM claims c
          WHERE c.company_id = $1 AND c.claim_date >= $2::date AND c.claim_date <= $3::date AND ${visibleClaim('c')}
          GROUP BY 1`,
        [companyId, fromDate, toDate],
      );
      return rows.map((r) => ({ month: r.month, claims: Number(r.claims) }));
    },

    async countsByStatus(companyId: string): Promise<{ status: ClaimStatus; claims: number }[]> {
      const rows = await db.query<{ status: ClaimStatus; claims: number }>(
        `SELECT c.status, count(*)::int AS claims FROM claims c WHERE c.company_id = $1 AND ${visibleClaim('c')} GROUP BY c.status`,
        [companyId],
      );
      return rows.map((r) => ({ status: r.status, claims: Number(r.claims) }));
    },

    /** People per company for the operator's list, in one statement. */
    async peopleCountByCompany(): Promise<Map<string, number>> {
      const rows = await db.query<{ company_id: string; people: number }>(
        'SELECT company_id, count(*)::int AS people FROM users WHERE company_id IS NOT NULL GROUP BY company_id',
      );
      return new Map(rows.map((r) => [r.company_id, Number(r.people)]));
    },
  };
}
