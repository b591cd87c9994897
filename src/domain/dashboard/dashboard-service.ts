import { CLAIM_STATUSES, type ClaimStatus } from '../claims/claim';
import { isUuid } from '../ids';
import type { DashboardRepository, SignedInUser } from './dashboard-repository';

export type { SignedInUser };

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

/** Reads behind the dashboard's pages that no other service offers. */
export function createDashboardService({ store, today }: { store: { dashboard: DashboardRepository }; today: () => string }) {
  return {
    /** The signed-in person with their company's name, or undefined when they no longer exist. */
    currentUser(userId: string) {
      return isUuid(userId) ? store.dashboard.findSignedInUser(userId) : Promise.resolve(undefined);
    },

    /** Claims per month of claim date over the last 12 months (months without claims included), and counts by status. */
    async overview(companyId: string) {
      const end = today();
      const months = lastMonths(end, 12);
      const [perMonth, perStatus] = await Promise.all([
        store.dashboard.claimsPerMonth(companyId, `${months[0]}-01`, end),
        store.dashboard.countsByStatus(companyId),
      ]);
      const byMonth = new Map(perMonth.map((r) => [r.month, r.claims]));
      const byStatus = new Map(perStatus.map((r) => [r.status, r.claims]));
      return {
        months: months.map((month): MonthCount => ({ month, label: monthLabel(month), claims: byMonth.get(month) ?? 0 })),
        statuses: CLAIM_STATUSES.map((status: ClaimStatus) => ({ status, claims: byStatus.get(status) ?? 0 })),
        total: perStatus.reduce((sum, r) => sum + r.claims, 0),
      };
    },

    peopleCountByCompany: () => store.dashboard.peopleCountByCompany(),
  };
}
export type DashboardService = ReturnType<typeof createDashboardService>;
