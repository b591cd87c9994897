-- Abuse limits, identity checks as disclosures, and personal data kept no longer than needed.

-- A company's own request limit per token and minute, set by the operator
-- (`admin company:limits`); no row: RATE_LIMIT_PER_MINUTE. 0: no limit for that company.
CREATE TABLE company_rate_limits (
  company_id uuid PRIMARY KEY REFERENCES companies (id) ON DELETE CASCADE,
  per_minute integer NOT NULL CHECK (per_minute >= 0),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- A mismatch (a document known with another date of birth, or documents of two persons) tells
-- the caller that a document exists: it is an entry of the company's look-up log, kind
-- 'identity_check', with result_count 1 and no claim, plate or client id shown. The persons whose
-- documents were matched are kept in the internal keys (client_key, other_client_key) for the
-- subject access export only.
ALTER TABLE lookups DROP CONSTRAINT IF EXISTS lookups_kind_check;
ALTER TABLE lookups ADD CONSTRAINT lookups_kind_check
  CHECK (kind IN ('plate_search', 'person_search', 'matches', 'incident', 'network', 'identity_check'));
ALTER TABLE lookups ADD COLUMN other_client_key uuid;
-- The hourly budget: a company's identity checks of the last hour, counted on every submission.
CREATE INDEX lookups_identity_checks_idx ON lookups (company_id, created_at) WHERE kind = 'identity_check';
CREATE INDEX lookups_other_client_key_idx ON lookups (other_client_key) WHERE other_client_key IS NOT NULL;

-- A delivery's body (other insurers' clients' names and dates of birth, in alerts.created) is
-- deleted WEBHOOK_RETENTION_DAYS after the delivery was delivered or given up; the record stays.
ALTER TABLE webhook_deliveries ALTER COLUMN body DROP NOT NULL;
ALTER TABLE webhook_deliveries ADD COLUMN body_deleted_at timestamptz;
CREATE INDEX webhook_deliveries_body_kept_idx ON webhook_deliveries (finished_at) WHERE body IS NOT NULL AND status <> 'pending';

-- A file uploaded in the dashboard and waiting at "import this file again?": deleted 24 hours
-- after its upload unless confirmed (or dropped) before.
CREATE TABLE pending_uploads (
  object_key text PRIMARY KEY,
  company_id uuid NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL
);
CREATE INDEX pending_uploads_created_idx ON pending_uploads (created_at);
