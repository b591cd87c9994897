import type { QualityCounts, QualityRepository } from '../domain/quality/quality';
import { visibleClaim } from './claim-visibility';
import type { Queryable } from './db';

/**
 * The figures of each company ($1, or every company when null) over the last $2 days, in one
 * statement: the period's claims through claims_company_created_idx (company, created_at) and its
 * completed imports through imports_company_created_idx. The filing delay is counted in whole
 * days of APP_TIMEZONE ($3) between the claim date and the registration date.
 */
const COUNTS = `
  WITH co AS (
    SELECT id, name FROM companies WHERE $1::uuid IS NULL OR id = $1::uuid
  ), c AS (
    -- Aggregated inside the lateral, one company at a time: grouped outside, the period's claims of
    -- every company would be sorted by company first (on disk, for a large one).
    SELECT co.id AS company_id, x.*
      FROM co
      CROSS JOIN LATERAL (
        SELECT count(*)::int AS claims,
               count(*) FILTER (WHERE cl.source = 'api')::int AS api,
               count(*) FILTER (WHERE cl.source = 'bulk_import')::int AS bulk_import,
               count(*) FILTER (WHERE cl.source = 'assisted')::int AS assisted,
               count(*) FILTER (WHERE cl.claim_type IS NULL)::int AS no_claim_type,
               count(*) FILTER (WHERE cl.amount IS NULL)::int AS no_amount,
               count(*) FILTER (WHERE cl.is_at_fault IS NULL)::int AS no_at_fault,
               percentile_disc(0.5) WITHIN GROUP (ORDER BY (cl.created_at AT TIME ZONE $3)::date - cl.claim_date) AS delay_p50,
               percentile_disc(0.9) WITHIN GROUP (ORDER BY (cl.created_at AT TIME ZONE $3)::date - cl.claim_date) AS delay_p90
          FROM claims cl
         WHERE cl.company_id = co.id AND cl.created_at >= now() - make_interval(days => $2::int) AND ${visibleClaim('cl')}
      ) x
  ), i AS (
    SELECT co.id AS company_id, coalesce(sum(im.imported), 0)::int AS imported, coalesce(sum(im.failed), 0)::int AS rejected
      FROM co
      LEFT JOIN imports im ON im.company_id = co.id AND im.created_at >= now() - make_interval(days => $2::int) AND im.status = 'completed'
     GROUP BY co.id
  )
  SELECT co.id AS company_id, co.name AS company_name, c.claims, c.api, c.bulk_import, c.assisted, c.no_claim_type, c.no_amount,
         c.no_at_fault, c.delay_p50, c.delay_p90, i.imported, i.rejected
    FROM co JOIN c ON c.company_id = co.id JOIN i ON i.company_id = co.id
   ORDER BY lower(co.name)`;

export function createQualityRepository(db: Queryable): QualityRepository {
  return {
    async counts(companyId, days, timeZone) {
      const rows = await db.query<{
        company_id: string;
        company_name: string;
        claims: number;
        api: number;
        bulk_import: number;
        assisted: number;
        no_claim_type: number;
        no_amount: number;
        no_at_fault: number;
        delay_p50: number | null;
        delay_p90: number | null;
        imported: number;
        rejected: number;
      }>(COUNTS, [companyId ?? null, days, timeZone]);
      return rows.map((r): QualityCounts & { companyId: string; companyName: string } => ({
        companyId: r.company_id,
        companyName: r.company_name,
        claims: r.claims,
        api: r.api,
        bulkImport: r.bulk_import,
        assisted: r.assisted,
        noClaimType: r.no_claim_type,
        noAmount: r.no_amount,
        noAtFault: r.no_at_fault,
        delayP50: r.delay_p50 === null ? null : Number(r.delay_p50),
        delayP90: r.delay_p90 === null ? null : Number(r.delay_p90),
        importedRows: r.imported,
        rejectedRows: r.rejected,
      }));
    },
  };
}
