-- An alert is its told company's look-up log entry (kind 'alert'): the log's reads take the alerts
-- from their own table (registry-repository.ts logPage, RETURNED_BY), so a submitted claim no
-- longer writes a second row, with four index entries, for each alert it makes.
DELETE FROM lookups WHERE kind = 'alert';
ALTER TABLE lookups DROP CONSTRAINT IF EXISTS lookups_kind_check;
ALTER TABLE lookups ADD CONSTRAINT lookups_kind_check CHECK (kind IN ('plate_search', 'person_search', 'matches'));
