-- The claims a look-up returned move from a row each in lookup_results into the look-up's own row
-- (claim_ids), so that logging a search is one row and its index entries instead of one more row
-- and two more index entries per returned claim: every one of those was a random insert into an
-- index keyed by claim, which made writing the log cost a plate search ~13% of its throughput.
--
-- "Which look-ups returned this claim" is found through what every such look-up must share with
-- the claim: its plate (plate_key: the plate searched, or the plate of the claim whose matches
-- were asked) or its person (client_key: the person searched, or the client of the claim whose
-- matches were asked). Those two indexes give the candidates newest first; claim_ids decides,
-- exactly, which of them returned the claim.
ALTER TABLE lookups
  ADD COLUMN claim_ids uuid[] NOT NULL DEFAULT '{}',
  ADD COLUMN plate_key text,
  ADD COLUMN client_key uuid;

UPDATE lookups l
   SET claim_ids = r.claim_ids
  FROM (SELECT lookup_id, array_agg(claim_id ORDER BY claim_id) AS claim_ids FROM lookup_results GROUP BY lookup_id) r
 WHERE r.lookup_id = l.id;
UPDATE lookups SET plate_key = vehicle_registration WHERE kind = 'plate_search';
UPDATE lookups SET client_key = client_id WHERE kind = 'person_search';
UPDATE lookups l
   SET plate_key = c.vehicle_registration, client_key = c.client_id
  FROM claims c
 WHERE l.kind = 'matches' AND c.id = l.claim_id;

CREATE INDEX lookups_plate_key_idx ON lookups (plate_key, created_at DESC, id DESC) WHERE plate_key IS NOT NULL;
CREATE INDEX lookups_client_key_idx ON lookups (client_key, created_at DESC, id DESC) WHERE client_key IS NOT NULL;

DROP TABLE lookup_results;
