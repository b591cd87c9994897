-- Registry intelligence: the look-up log and what retention needs.

-- Every cross-company read (plate search, person search, matches of a claim), written in the same
-- statement as the read itself. A person search records the client it resolved to (never a
-- document); matches record the claim they were asked for.
CREATE TABLE lookups (
  id uuid PRIMARY KEY,
  company_id uuid NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  token_id uuid,
  user_id uuid,
  kind text NOT NULL CHECK (kind IN ('plate_search', 'person_search', 'matches')),
  vehicle_registration text,
  client_id uuid,
  claim_id uuid,
  result_count integer NOT NULL CHECK (result_count >= 0),
  purpose text CHECK (length(purpose) <= 200),
  created_at timestamptz NOT NULL DEFAULT now()
);
-- "Our look-ups", newest first, keyset-paged.
CREATE INDEX lookups_company_created_idx ON lookups (company_id, created_at DESC, id DESC);
-- Retention: look-ups past LOOKUP_RETENTION_DAYS.
CREATE INDEX lookups_created_idx ON lookups (created_at);
-- Retention: the matches look-ups of a deleted claim.
CREATE INDEX lookups_claim_idx ON lookups (claim_id) WHERE claim_id IS NOT NULL;

-- Which claims each look-up returned, so that "who looked at this claim" is one index range:
-- (claim_id, created_at DESC) answers it newest first. created_at is the look-up's own time.
-- No foreign keys: the rows are written on the hot path of every search, and retention deletes
-- them explicitly together with their claim or their look-up.
CREATE TABLE lookup_results (
  claim_id uuid NOT NULL,
  lookup_id uuid NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (claim_id, created_at, lookup_id)
);
CREATE INDEX lookup_results_lookup_idx ON lookup_results (lookup_id);

-- The daily retention run: the process that moves this forward runs it (one per day, whatever
-- the number of workers).
INSERT INTO app_meta (key, value) VALUES ('retention_last_run', '1970-01-01T00:00:00Z') ON CONFLICT (key) DO NOTHING;
