import { secondFactorNeeded, type Actor } from '../access/access';
import { CLAIM_STATUSES, type ClaimStatus } from '../claims/claim';
import { isUuid } from '../ids';
import { isIsoDate } from '../dates';
import { logSince } from '../registry/registry';
import type {
  ClaimListFilter,
  ClaimListKey,
  ClaimListRow,
  ClaimListSeek,
  ClaimListSort,
  DashboardRepository,
  LookupLogFilter,
  SignedInUser,
  SignedInUserRecord,
} from './dashboard-repository';

export type { SignedInUser };

/** A person as access.ts sees them: the operator (no company) or a person of a company. */
export function actorOfPerson(user: SignedInUserRecord): Actor {
  if (user.companyId === null || user.role === 'operator') {
    return { type: 'operator', id: user.id, email: user.email, secondFactor: user.secondFactor };
  }
  return {
    type: 'person',
    id: user.id,
    email: user.email,
    companyId: user.companyId,
    role: user.role,
    secondFactor: user.secondFactor,
    companyRequiresSecondFactor: user.companyRequiresSecondFactor,
    companySuspended: user.companySuspended,
  };
}

export type MonthCount = { month: string; label: string; claims: number };

const MONTH_NAMES = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** The `count` calendar months ending with the month of `today` (YYYY-MM-DD), oldest first, as YYYY-MM. */
export function lastMonths(today: string, count: number): string[] {
  const year = Number(today.slice(0, 4));
  const month = Number(today.slice(5, 7)) - 1;
  const out: string[] = [];
  for (let i = count - 1; i >= 0; i--) {
    const total = year * 12 + month - i;
    out.push(`${String(Math.floor(total / 12)).padStart(4, '0')}-${String((total % 12) + 1).padStart(2, '0')}`);
  }
  return out;
}

export const monthLabel = (month: string) => `${MONTH_NAMES[Number(month.slice(5, 7)) - 1]} ${month.slice(0, 4)}`;

export const CLAIM_LIST_PAGE_SIZE = 25;
/** The same file uploaded again within this many days is imported only after a confirmation. */
export const DUPLICATE_FILE_DAYS = 30;
/** Rows per statement of the claims export: the file is written as each batch arrives. */
export const CLAIM_EXPORT_BATCH = 1000;

/** A list position as it travels in a link: the sort it belongs to and the row's key. */
export function encodeListKey(sort: ClaimListSort, key: ClaimListKey): string {
  return Buffer.from(`${sort}|${key.date}|${key.ts}|${key.id}`, 'utf8').toString('base64url');
}

/** The key of a link made for this sort, or undefined (another sort's, edited, or not ours). */
export function decodeListKey(sort: ClaimListSort, raw: string): ClaimListKey | undefined {
  const [s, date, ts, id] = Buffer.from(raw, 'base64url').toString('utf8').split('|');
  if (s !== sort || !date || !ts || !id || !isIsoDate(date) || !isUuid(id)) return undefined;
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/u.test(ts)) return undefined;
  return { date, ts, id };
}

/** Reads behind the dashboard's pages that no other service offers. */
export function createDashboardService({
  repos,
  today,
  timeZone,
  lookupRetentionDays,
}: {
  repos: { dashboard: DashboardRepository };
  today: () => string;
  timeZone: string;
  /** How long the look-up log shows an entry (LOOKUP_RETENTION_DAYS). */
  lookupRetentionDays: number;
}) {
  return {
    /** The signed-in person with their company's name, or undefined when they no longer exist. */
    async currentUser(userId: string): Promise<SignedInUser | undefined> {
      if (!isUuid(userId)) return undefined;
      const user = await repos.dashboard.findSignedInUser(userId);
      if (!user) return undefined;
      const actor = actorOfPerson(user);
      const secondFactorRequired = secondFactorNeeded(
        actor.type === 'operator' ? actor : { type: 'person', companyRequiresSecondFactor: user.companyRequiresSecondFactor },
      );
      return { ...user, actor, secondFactorRequired };
    },

    /** Claims per month of claim date over the last 12 months (months without claims included), and counts by status. */
    async overview(companyId: string) {
      const end = today();
      const months = lastMonths(end, 12);
      const [perMonth, perStatus] = await Promise.all([
        repos.dashboard.claimsPerMonth(companyId, `${months[0]}-01`, end),
        repos.dashboard.countsByStatus(companyId),
      ]);
      const byMonth = new Map(perMonth.map((r) => [r.month, r.claims]));
      const byStatus = new Map(perStatus.map((r) => [r.status, r.claims]));
      return {
        months: months.map((month): MonthCount => ({ month, label: monthLabel(month), claims: byMonth.get(month) ?? 0 })),
        statuses: CLAIM_STATUSES.map((status: ClaimStatus) => ({ status, claims: byStatus.get(status) ?? 0 })),
        total: perStatus.reduce((sum, r) => sum + r.claims, 0),
      };
    },

    peopleCountByCompany: () => repos.dashboard.peopleCountByCompany(),
    companyCounts: () => repos.dashboard.companyCounts(),
    recentImports: (limit = 20) => repos.dashboard.recentImports(limit),

    /**
     * A page of the claims list with the total for the filter. `page` is the number the link
     * that led here carried (keyset pages have no number of their own), kept within 1..pages.
     */
    async claimList(companyId: string, filter: ClaimListFilter, sort: ClaimListSort, seek: ClaimListSeek, page: number) {
      // The last page holds what is left over after the full pages, as its number promises.
      const lastPageSize = (total: number) => total - (Math.max(1, Math.ceil(total / CLAIM_LIST_PAGE_SIZE)) - 1) * CLAIM_LIST_PAGE_SIZE;
      const [rows, total] =
        seek.kind === 'last'
          ? await repos.dashboard
              .countClaims(companyId, filter)
              .then(
                async (n) => [await repos.dashboard.listClaims(companyId, filter, sort, seek, Math.max(1, lastPageSize(n))), n] as const,
              )
          : await Promise.all([
              repos.dashboard.listClaims(companyId, filter, sort, seek, CLAIM_LIST_PAGE_SIZE),
              repos.dashboard.countClaims(companyId, filter),
            ]);
      const pages = Math.max(1, Math.ceil(total / CLAIM_LIST_PAGE_SIZE));
      const number = seek.kind === 'first' ? 1 : seek.kind === 'last' ? pages : Math.min(Math.max(1, page), pages);
      return { rows, total, page: number, pages };
    },

    /** Who changed a claim's status, when, from and to; newest first. The claim is the company's (the caller read it). */
    statusHistory: (companyId: string, claimId: string) => repos.dashboard.statusHistory(companyId, claimId),

    /** A page of the look-up log with who made each look-up; `next` is the key of the page after, if any. */
    async lookupLog(companyId: string, filter: LookupLogFilter, after: { ts: string; id: string } | undefined, limit: number) {
      const since = logSince(new Date(), lookupRetentionDays);
      const rows = await repos.dashboard.listLookups(companyId, filter, timeZone, since, after, limit + 1);
      return { rows: rows.slice(0, limit), next: rows.length > limit ? rows[limit - 1]!.key : null };
    },

    lookupActors: (companyId: string) => repos.dashboard.lookupActors(companyId),

    /** The company's import of the same file in the last 30 days that stored (or will store) claims, if any. */
    earlierImportOfFile(companyId: string, sha256: string, now = new Date()) {
      const since = new Date(now.getTime() - DUPLICATE_FILE_DAYS * 86_400_000).toISOString();
      return repos.dashboard.earlierImportOfFile(companyId, sha256, since);
    },

    /** Every claim of the filter in the list's order, a batch at a time (one keyset statement each). */
    async *exportClaims(companyId: string, filter: ClaimListFilter, sort: ClaimListSort): AsyncGenerator<ClaimListRow[]> {
      let seek: ClaimListSeek = { kind: 'first' };
      for (;;) {
        const rows = await repos.dashboard.listClaims(companyId, filter, sort, seek, CLAIM_EXPORT_BATCH);
        if (rows.length > 0) yield rows;
        if (rows.length < CLAIM_EXPORT_BATCH) return;
        seek = { kind: 'after', key: rows.at(-1)!.key, skip: 0 };
      }
    },
  };
}
export type DashboardService = ReturnType<typeof createDashboardService>;
