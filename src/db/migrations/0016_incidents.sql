-- Incidents and networks.
--
-- 1. The look-up log's new kinds: the incident of a claim, and the network around it. Each is found
--    by the claim it was asked for (claim_id) and, like matches, by that claim's plate and person
--    (plate_key, client_key), which every claim it returns shares.
ALTER TABLE lookups DROP CONSTRAINT IF EXISTS lookups_kind_check;
ALTER TABLE lookups ADD CONSTRAINT lookups_kind_check
  CHECK (kind IN ('plate_search', 'person_search', 'matches', 'incident', 'network'));

-- 2. A match alert tells whether its two claims are one incident (claim dates at most 1 day apart;
--    they are of two companies and share the plate or the person, or there would be no alert).
--    Written with the alert: claim dates never change.
ALTER TABLE alerts ADD COLUMN same_incident boolean NOT NULL DEFAULT false;
UPDATE alerts a
   SET same_incident = true
  FROM claims mine, claims other
 WHERE a.kind = 'match' AND mine.id = a.claim_id AND other.id = a.matched_claim_id
   AND abs(mine.claim_date - other.claim_date) <= 1;
