-- The dashboard's claims list (issue 23): a company's claims newest claim date first, narrowed by
-- status, plate, client name, claim dates and source, paged by keyset. Each index serves one way
-- in; the list then reads 25 rows in index order, whatever the company's size.
--
-- The default order. INCLUDE lets the total for a status, source or date filter be counted from
-- the index alone (import_id for the visibility check of import claims).
CREATE INDEX claims_company_claim_date_idx
  ON claims (company_id, claim_date DESC, created_at DESC, id DESC) INCLUDE (status, source, import_id);
-- A status filter in the default order (claims_company_status_created_idx serves it by registration time).
CREATE INDEX claims_company_status_claim_date_idx ON claims (company_id, status, claim_date DESC, created_at DESC, id DESC);
-- A plate or its beginning (LIKE 'AB1%' needs the pattern operator class).
CREATE INDEX claims_company_plate_idx ON claims (company_id, vehicle_registration text_pattern_ops);
-- A client's name by the beginning of the first or last name, any case; their claims are then
-- found through claims_client_idx.
CREATE INDEX clients_last_name_idx ON clients (lower(last_name) text_pattern_ops);
CREATE INDEX clients_first_name_idx ON clients (lower(first_name) text_pattern_ops);

-- The file's SHA-256 (computed at upload): the dashboard asks before importing the same file a
-- second time within 30 days. Imports recorded before this migration have none.
ALTER TABLE imports ADD COLUMN sha256 text;
CREATE INDEX imports_company_sha256_idx ON imports (company_id, sha256, created_at DESC) WHERE sha256 IS NOT NULL;
