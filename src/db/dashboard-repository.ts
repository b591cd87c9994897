import type { ClaimStatus } from '../domain/claims/claim';
import type { UserRole } from '../domain/companies/company-repository';
import type {
  ClaimListFilter,
  ClaimListRow,
  ClaimListSort,
  DashboardRepository,
  SignedInUserRecord,
  CompanyCounts,
  EarlierImport,
  OperatorImport,
  LookupActor,
  LookupLogRow,
  StatusHistoryEntry,
} from '../domain/dashboard/dashboard-repository';
import { claimFieldColumns } from './claim-columns';
import { visibleClaim } from './claim-visibility';
import type { Queryable } from './db';
import { olderThan, positionTs } from './keyset';
import { logPage } from './registry-repository';
import { isoTime } from './columns';

/** The claim's fields of the answer (claim-columns.ts) but its company's name: the list is one company's own. */
const LIST_COLUMNS = claimFieldColumns(['company_name']);

/** LIKE's own characters in a value taken literally. */
const likeLiteral = (value: string) => value.replace(/[\\%_]/gu, (c) => `\\${c}`);

/**
 * The WHERE of the claims list: the company, visibility, and each part of the filter given.
 * Parameters are appended to `params`; the client's table is needed (`cl`) only for a name.
 */
function claimListWhere(companyId: string, f: ClaimListFilter, params: unknown[]): string {
  const p = (value: unknown) => `$${params.push(value)}`;
  const conds = [`c.company_id = ${p(companyId)}`, visibleClaim('c')];
  if (f.status) conds.push(`c.status = ${p(f.status)}`);
  if (f.source) conds.push(`c.source = ${p(f.source)}`);
  if (f.plate) conds.push(`c.vehicle_registration LIKE ${p(`${likeLiteral(f.plate)}%`)}`);
  if (f.from) conds.push(`c.claim_date >= ${p(f.from)}::text::date`);
  if (f.to) conds.push(`c.claim_date <= ${p(f.to)}::text::date`);
  for (const word of (f.name ?? '').toLowerCase().split(/\s+/u).filter(Boolean)) {
    const w = p(`${likeLiteral(word)}%`);
    conds.push(`(lower(cl.first_name) LIKE ${w} OR lower(cl.last_name) LIKE ${w})`);
  }
  return conds.join(' AND ');
}

/** The sort's key columns, in the list's (descending) order. */
const SORT_KEYS: Record<ClaimListSort, string[]> = {
  claim_date: ['c.claim_date', 'c.created_at', 'c.id'],
  registered: ['c.created_at', 'c.id'],
};

/** Read-only queries behind the dashboard pages: one statement each, grouped in SQL. */
export function createDashboardRepository(db: Queryable): DashboardRepository {
  return {
    /** A person and their company's name in one round trip (the per-request "who is signed in"). */
    async findSignedInUser(userId: string): Promise<SignedInUserRecord | undefined> {
      const rows = await db.query<{
        id: string;
        email: string;
        role: UserRole;
        company_id: string | null;
        company_name: string | null;
        second_factor: boolean;
        company_requires_second_factor: boolean;
        company_suspended: boolean;
      }>(
        `SELECT u.id, u.email, u.role, u.company_id, co.name AS company_name,
                u.totp_enabled_at IS NOT NULL AS second_factor,
                COALESCE(co.require_second_factor, false) AS company_requires_second_factor,
                co.suspended_at IS NOT NULL AS company_suspended
           FROM users u LEFT JOIN companies co ON co.id = u.company_id
          WHERE u.id = $1`,
        [userId],
      );
      const r = rows[0];
      return (
        r && {
          id: r.id,
          email: r.email,
          role: r.role,
          companyId: r.company_id,
          companyName: r.company_name,
          secondFactor: r.second_factor,
          companyRequiresSecondFactor: r.company_requires_second_factor,
          companySuspended: r.company_suspended,
        }
      );
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

    /**
     * One page in index order: a seek after a key reads the rows below it (the page's older
     * neighbours), one before a key or the last page reads upwards and is turned around here.
     */
    async listClaims(companyId, filter, sort, seek, limit): Promise<ClaimListRow[]> {
      const params: unknown[] = [];
      let where = claimListWhere(companyId, filter, params);
      const keys = SORT_KEYS[sort];
      const upwards = seek.kind === 'last' || seek.kind === 'before';
      if (seek.kind === 'after' || seek.kind === 'before') {
        // Sent as text: the postgres driver would turn a timestamptz parameter into a JavaScript
        // Date and lose the microseconds that tell two rows apart.
        const values = [...(sort === 'claim_date' ? [`$${params.push(seek.key.date)}::text::date`] : [])];
        values.push(`$${params.push(seek.key.ts)}::text::timestamptz`, `$${params.push(seek.key.id)}::text::uuid`);
        where += ` AND (${keys.join(', ')}) ${seek.kind === 'after' ? '<' : '>'} (${values.join(', ')})`;
      }
      const order = keys.map((k) => `${k} ${upwards ? 'ASC' : 'DESC'}`).join(', ');
      const skip = seek.kind === 'after' || seek.kind === 'before' ? seek.skip : 0;
      const rows = await db.query<Omit<ClaimListRow, 'key'> & { position_ts: string }>(
        `SELECT ${LIST_COLUMNS}, ${positionTs('c.created_at')} AS position_ts,
                cl.first_name, cl.last_name, cl.date_of_birth::text AS date_of_birth,
                (SELECT min(d.doc_type) FROM identity_documents d WHERE d.client_id = cl.id) AS id_type
           FROM claims c JOIN clients cl ON cl.id = c.client_id
          WHERE ${where}
          ORDER BY ${order}
          LIMIT ${Number(limit)} OFFSET ${Number(skip)}`,
        params,
      );
      const page = rows.map(({ position_ts, ...r }) => ({ ...r, key: { date: r.claim_date, ts: position_ts, id: r.id } }));
      return upwards ? page.reverse() : page;
    },

    async statusHistory(companyId: string, claimId: string): Promise<StatusHistoryEntry[]> {
      return db.query<StatusHistoryEntry>(
        `SELECT s.from_status, s.to_status,
                ${isoTime('s.changed_at')} AS changed_at,
                u.email AS user_email, t.name AS token_name
           FROM claim_status_changes s
           JOIN claims c ON c.id = s.claim_id
           LEFT JOIN users u ON u.id = s.changed_by_user_id
           LEFT JOIN api_tokens t ON t.id = s.changed_by_token_id
          WHERE c.company_id = $1 AND s.claim_id = $2
          ORDER BY s.id DESC`,
        [companyId, claimId],
      );
    },

    async companyCounts(): Promise<CompanyCounts[]> {
      const rows = await db.query<CompanyCounts>(
        `SELECT co.id,
                (SELECT count(*)::int FROM claims c WHERE c.company_id = co.id AND ${visibleClaim('c')}) AS claims,
                (SELECT count(*)::int FROM imports i WHERE i.company_id = co.id) AS imports,
                (SELECT count(*)::int FROM api_tokens t WHERE t.company_id = co.id AND t.revoked_at IS NULL) AS tokens,
                (SELECT count(*)::int FROM users u WHERE u.company_id = co.id) AS people
           FROM companies co`,
      );
      return rows.map((r) => ({
        id: r.id,
        claims: Number(r.claims),
        imports: Number(r.imports),
        tokens: Number(r.tokens),
        people: Number(r.people),
      }));
    },

    async recentImports(limit: number): Promise<OperatorImport[]> {
      return db.query<OperatorImport>(
        `SELECT i.id, co.name AS company_name, i.file_name, i.status, i.rows_total, i.imported, i.failed,
                to_char(i.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"+00:00"') AS created_at,
                to_char(i.finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"+00:00"') AS finished_at
           FROM imports i JOIN companies co ON co.id = i.company_id
          ORDER BY i.created_at DESC, i.id DESC
          LIMIT $1`,
        [limit],
      );
    },

    async listLookups(companyId, filter, timeZone, since, after, limit): Promise<LookupLogRow[]> {
      const params: unknown[] = [companyId, since];
      const p = (value: unknown) => `$${params.push(value)}`;
      const conds = ['l.company_id = $1', 'l.created_at >= $2::text::timestamptz'];
      if (filter.kind) conds.push(`l.kind = ${p(filter.kind)}`);
      if (filter.userId) conds.push(`l.user_id = ${p(filter.userId)}::text::uuid`);
      if (filter.tokenId) conds.push(`l.token_id = ${p(filter.tokenId)}::text::uuid`);
      // Days in the service's time zone: from its first instant, to before the next day's.
      if (filter.from) conds.push(`l.created_at >= (${p(filter.from)}::text::date)::timestamp AT TIME ZONE ${p(timeZone)}`);
      if (filter.to) conds.push(`l.created_at < (${p(filter.to)}::text::date + 1)::timestamp AT TIME ZONE ${p(timeZone)}`);
      if (after) conds.push(olderThan('l', p(after.ts), p(after.id)));
      const rows = await db.query<Omit<LookupLogRow, 'key'> & { position_ts: string }>(
        `SELECT l.id, l.kind, l.vehicle_registration, l.claim_id, l.result_count, l.purpose,
                ${isoTime('l.created_at')} AS created_at,
                ${positionTs('l.created_at')} AS position_ts,
                u.email AS user_email, t.name AS token_name,
                (SELECT count(*)::int FROM claims x WHERE x.id = ANY (l.claim_ids) AND x.company_id <> l.company_id) AS other_company_claims
           FROM (${logPage(conds.join(' AND '), String(Number(limit)))}) l
           LEFT JOIN users u ON u.id = l.user_id
           LEFT JOIN api_tokens t ON t.id = l.token_id
          ORDER BY l.created_at DESC, l.id DESC`,
        params,
      );
      return rows.map(({ position_ts, ...r }) => ({
        ...r,
        result_count: Number(r.result_count),
        other_company_claims: Number(r.other_company_claims),
        key: { ts: position_ts, id: r.id },
      }));
    },

    async earlierImportOfFile(companyId: string, sha256: string, since: string): Promise<EarlierImport | undefined> {
      const rows = await db.query<EarlierImport>(
        `SELECT id, file_name, ${isoTime('created_at')} AS created_at, status, imported
           FROM imports
          WHERE company_id = $1 AND sha256 = $2 AND created_at >= $3::text::timestamptz AND status IN ('queued', 'processing', 'completed')
          ORDER BY created_at DESC
          LIMIT 1`,
        [companyId, sha256, since],
      );
      return rows[0];
    },

    async lookupActors(companyId: string): Promise<LookupActor[]> {
      return db.query<LookupActor>(
        `SELECT 'user' AS kind, id, email AS name FROM users WHERE company_id = $1
         UNION ALL
         SELECT 'token', id, name FROM api_tokens WHERE company_id = $1
         ORDER BY 1 DESC, 3`,
        [companyId],
      );
    },

    async countClaims(companyId, filter): Promise<number> {
      const params: unknown[] = [];
      const where = claimListWhere(companyId, filter, params);
      const join = filter.name ? 'JOIN clients cl ON cl.id = c.client_id' : '';
      const rows = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM claims c ${join} WHERE ${where}`, params);
      return Number(rows[0]!.n);
    },
  };
}
