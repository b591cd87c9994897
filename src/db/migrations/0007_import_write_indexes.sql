-- Fewer indexes on claims, so that writing claims (an import writes tens of thousands) costs less:
-- every index is one more random insert per claim. Both indexes removed here have a cheaper way:
--
-- * claims_company_status_created_idx (the largest index of the table): listing a company's claims
--   by status walks claims_company_created_idx newest first and skips the other statuses; with five
--   statuses a page of 20 reads about a hundred index entries.
-- * claims_import_idx: only the removal of a failed or cancelled import's claims used it; it now
--   finds them through claims_company_created_idx, from the import's creation time onwards.
DROP INDEX IF EXISTS claims_company_status_created_idx;
DROP INDEX IF EXISTS claims_import_idx;
