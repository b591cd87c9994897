-- Alerts: a company is told, without asking again, when another company's claim turns up on the
-- plate or the person of one of its claims (kind 'match'), and when a claim its look-ups returned
-- changes status (kind 'status_changed'). Each alert is also a look-up log entry (kind 'alert') of
-- the company told, so the owner of the claim sees who was told.
CREATE TABLE alerts (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  -- The company told.
  company_id uuid NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  kind text NOT NULL CHECK (kind IN ('match', 'status_changed')),
  -- The told company's own claim (match only).
  claim_id uuid REFERENCES claims (id) ON DELETE CASCADE,
  -- The other company's claim: the new claim (match) or the changed one (status_changed).
  matched_claim_id uuid NOT NULL REFERENCES claims (id) ON DELETE CASCADE,
  on_plate boolean NOT NULL DEFAULT false,
  on_client boolean NOT NULL DEFAULT false,
  from_status text,
  to_status text,
  created_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((kind = 'match') = (claim_id IS NOT NULL)),
  CHECK ((kind = 'status_changed') = (to_status IS NOT NULL AND from_status IS NOT NULL))
);
-- GET /alerts: a company's alerts newest first, keyset-paged (one index range).
CREATE INDEX alerts_company_created_idx ON alerts (company_id, created_at DESC, id DESC);
-- GET /alerts?claim_id=: the alerts of one own claim newest first; also the cascade when that claim goes.
CREATE INDEX alerts_claim_idx ON alerts (claim_id, created_at DESC, id DESC) WHERE claim_id IS NOT NULL;
-- The cascade when the other company's claim goes (retention).
CREATE INDEX alerts_matched_claim_idx ON alerts (matched_claim_id);
-- One match alert per pair of claims, whichever of the two was stored first and however often the
-- same claims are stored or an import's completion runs again (writes use ON CONFLICT DO NOTHING).
CREATE UNIQUE INDEX alerts_pair_key ON alerts (least(claim_id, matched_claim_id), greatest(claim_id, matched_claim_id))
  WHERE kind = 'match';

-- The look-up log's kinds: an alert received is a look-up of the company told.
ALTER TABLE lookups DROP CONSTRAINT IF EXISTS lookups_kind_check;
ALTER TABLE lookups ADD CONSTRAINT lookups_kind_check CHECK (kind IN ('plate_search', 'person_search', 'matches', 'alert'));

-- Batch plate look-ups: a file of plates, answered for all of them at once by a job. The results
-- hold one row per distinct normalized plate, in the order of its first row in the file (seq).
CREATE TABLE lookup_batches (
  id uuid PRIMARY KEY,
  company_id uuid NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  token_id uuid,
  user_id uuid,
  purpose text CHECK (length(purpose) <= 200),
  status text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'processing', 'completed', 'failed')),
  file_name text NOT NULL CHECK (length(file_name) BETWEEN 1 AND 255),
  object_key text NOT NULL,
  -- Data rows in the file (counted at upload), rows read so far, and what they gave.
  plates integer NOT NULL DEFAULT 0,
  rows_done integer NOT NULL DEFAULT 0,
  distinct_plates integer NOT NULL DEFAULT 0,
  invalid_rows integer NOT NULL DEFAULT 0,
  message text,
  created_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz
);
CREATE INDEX lookup_batches_company_created_idx ON lookup_batches (company_id, created_at DESC, id DESC);
CREATE INDEX lookup_batches_unfinished_idx ON lookup_batches (created_at) WHERE status IN ('queued', 'processing');

CREATE TABLE lookup_batch_results (
  batch_id uuid NOT NULL REFERENCES lookup_batches (id) ON DELETE CASCADE,
  vehicle_registration text NOT NULL,
  seq integer NOT NULL,
  claims integer NOT NULL,
  companies integer NOT NULL,
  latest_claim_date date,
  PRIMARY KEY (batch_id, vehicle_registration)
);
-- results.csv in file order, keyset-paged.
CREATE INDEX lookup_batch_results_seq_idx ON lookup_batch_results (batch_id, seq);
