-- GET /quality reads every claim a company registered in the period (up to 365 days). Through
-- claims_company_created_idx alone that is one heap page per claim: at 1,000,000 claims a year of
-- one company (10,000 claims) took 30 to 45 ms of the statement's 45 (bench/alerts-quality.ts),
-- over the 50 ms goal at the tail. The same index carrying the columns the report counts (and
-- import_id, for the visibility check) answers it from the index alone.
--
-- It replaces the index rather than adding one, so that writing a claim updates no more indexes
-- than before; its key and name stay, and with them every plan that used it (the claims list by
-- registration time, an import's claims from its creation time, which can now skip other imports'
-- claims on the index too).
CREATE INDEX claims_company_created_cover_idx ON claims (company_id, created_at DESC, id DESC)
  INCLUDE (source, claim_type, amount, is_at_fault, claim_date, import_id);
DROP INDEX claims_company_created_idx;
ALTER INDEX claims_company_created_cover_idx RENAME TO claims_company_created_idx;
