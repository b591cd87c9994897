-- The claims list filtered by status reads claims_company_claim_date_idx, which carries the status
-- (INCLUDE): the page walks it newest first and skips the other statuses, and the total counts from
-- the index alone. claims_company_status_claim_date_idx led the planner to count through the table
-- instead, slower for the total and no faster for the page (bench/claims-list.ts with and without
-- it, docs/performance.md), and every claim written had one more index to update.
DROP INDEX IF EXISTS claims_company_status_claim_date_idx;
