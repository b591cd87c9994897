import { validationError } from '../errors';
import type { Principal } from '../principal';

export const QUALITY_DAYS = { min: 1, max: 365, default: 90 } as const;

/** A company's data-quality figures over the claims registered in the last `period_days` days. */
export type QualityReport = {
  period_days: number;
  claims_stored: number;
  by_source: { api: number; bulk_import: number; assisted: number };
  import_rows_rejected: number;
  /** rejected ÷ (imported + rejected) rows of the period's completed imports; 0 when none. */
  import_rejection_rate: number;
  /** Shares of the period's claims without each optional field. */
  missing: { claim_type: number; amount: number; is_at_fault: number };
  /** Whole days from claim date to registration (null when no claim). */
  filing_delay_days: { p50: number | null; p90: number | null };
};

/** The counts a quality report is made of, as the database sums them. */
export type QualityCounts = {
  claims: number;
  api: number;
  bulkImport: number;
  assisted: number;
  noClaimType: number;
  noAmount: number;
  noAtFault: number;
  delayP50: number | null;
  delayP90: number | null;
  importedRows: number;
  rejectedRows: number;
};

export interface QualityRepository {
  /** The counts of each company (all when `companyId` is undefined) over the last `days` days; APP_TIMEZONE days for the delay. */
  counts(
    companyId: string | undefined,
    days: number,
    timeZone: string,
  ): Promise<(QualityCounts & { companyId: string; companyName: string })[]>;
}

/** A fraction from 0 to 1 with 4 decimals; 0 when there is nothing to divide. */
export const share = (part: number, whole: number): number => (whole === 0 ? 0 : Math.round((part / whole) * 10_000) / 10_000);

export function reportOf(c: QualityCounts, days: number): QualityReport {
  return {
    period_days: days,
    claims_stored: c.claims,
    by_source: { api: c.api, bulk_import: c.bulkImport, assisted: c.assisted },
    import_rows_rejected: c.rejectedRows,
    import_rejection_rate: share(c.rejectedRows, c.importedRows + c.rejectedRows),
    missing: { claim_type: share(c.noClaimType, c.claims), amount: share(c.noAmount, c.claims), is_at_fault: share(c.noAtFault, c.claims) },
    filing_delay_days: { p50: c.delayP50, p90: c.delayP90 },
  };
}

const EMPTY: QualityCounts = {
  claims: 0,
  api: 0,
  bulkImport: 0,
  assisted: 0,
  noClaimType: 0,
  noAmount: 0,
  noAtFault: 0,
  delayP50: null,
  delayP90: null,
  importedRows: 0,
  rejectedRows: 0,
};

/** `days` as given (a query string or a number): a whole number from 1 to 365, default 90; else a 422. */
export function parseDays(raw: unknown): number {
  if (raw === undefined || raw === null || raw === '') return QUALITY_DAYS.default;
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\d{1,4}$/u.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isInteger(n) || n < QUALITY_DAYS.min || n > QUALITY_DAYS.max) {
    throw validationError({ days: [`The days must be a whole number from ${QUALITY_DAYS.min} to ${QUALITY_DAYS.max}.`] });
  }
  return n;
}

export function createQualityService({ quality, timeZone }: { quality: QualityRepository; timeZone: string }) {
  return {
    /** GET /quality: the caller's company's figures. */
    async report(principal: Pick<Principal, 'companyId'>, rawDays: unknown): Promise<QualityReport> {
      const days = parseDays(rawDays);
      const [row] = await quality.counts(principal.companyId, days, timeZone);
      return reportOf(row ?? EMPTY, days);
    },
    /** The operator's page: every company side by side (companies with nothing in the period included). */
    async allCompanies(rawDays: unknown): Promise<{ companyId: string; companyName: string; report: QualityReport }[]> {
      const days = parseDays(rawDays);
      const rows = await quality.counts(undefined, days, timeZone);
      return rows.map((r) => ({ companyId: r.companyId, companyName: r.companyName, report: reportOf(r, days) }));
    },
  };
}
export type QualityService = ReturnType<typeof createQualityService>;
