-- Every index of the claims table costs each claim written one more index insert (an import writes
-- tens of thousands): each says here which query needs it, and a test fails for an index that
-- says nothing (test/db/claims-indexes.test.ts). One that no query needs is dropped instead.
COMMENT ON INDEX claims_pkey IS
  'A claim by its id: GET /claims/{id}, a status change, the alerts'' and look-ups'' claims, retention.';
COMMENT ON INDEX claims_plate_date_idx IS
  'The plate search (plate, claims of the search window), match alerts and incidents by plate, the batch plate look-up.';
COMMENT ON INDEX claims_client_idx IS
  'A person''s claims: the person search, match alerts by person, the dashboard''s client-name filter, retention of persons.';
COMMENT ON INDEX claims_company_created_idx IS
  'A company''s claims newest registered first: GET /claims, GET /quality (index-only, its INCLUDE columns), an import''s claims from its creation time (match alerts, removal).';
COMMENT ON INDEX claims_company_claim_date_idx IS
  'The dashboard''s claims list in its default order (newest claim date first), its status and source filters and totals from the index alone.';
COMMENT ON INDEX claims_company_plate_idx IS
  'The dashboard''s claims list filtered by a plate or its beginning (LIKE ''AB1%'', the pattern operator class).';
