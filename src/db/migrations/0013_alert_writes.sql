-- Cheaper alert writes. A claim stored through the API makes about four match alerts on the
-- benchmark's data, each an alert and a look-up log entry, in the claim's own statement: those rows
-- cost the submission more than the claim itself (docs/performance.md).
--
-- 1. Time-ordered ids for the rows written by statements (alerts and their look-up entries), as
--    the service gives claims, persons and look-ups: a random id is a random page of its primary
--    key for every row.
CREATE OR REPLACE FUNCTION uuid_v7() RETURNS uuid LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
  -- A random (version 4) uuid whose first 48 bits become the time in milliseconds and whose
  -- version becomes 7 (RFC 9562).
  SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
           PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3) FROM 1 FOR 6),
         52, 1), 53, 1), 'hex')::uuid
$$;
ALTER TABLE alerts ALTER COLUMN id SET DEFAULT uuid_v7();

-- 2. No per-row foreign-key triggers on alerts and look-up entries. Each checked its company and
--    claims row by row and locked those rows (an old claim's page written for every alert). The
--    statements that write them read those rows themselves; retention deletes the alerts of the
--    claims it removes explicitly (registry-repository.ts purgeClaimsBatch), as it already did
--    the claims' look-up entries; companies are never deleted.
ALTER TABLE alerts DROP CONSTRAINT IF EXISTS alerts_company_id_fkey;
ALTER TABLE alerts DROP CONSTRAINT IF EXISTS alerts_claim_id_fkey;
ALTER TABLE alerts DROP CONSTRAINT IF EXISTS alerts_matched_claim_id_fkey;
ALTER TABLE lookups DROP CONSTRAINT IF EXISTS lookups_company_id_fkey;

-- 3. An alert's look-up entry is found through the claim it names (claim_id,
--    lookups_claim_idx), not through the plate and person indexes: two fewer index entries each.
UPDATE lookups SET plate_key = NULL, client_key = NULL WHERE kind = 'alert';
