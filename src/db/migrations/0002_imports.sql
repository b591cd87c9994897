-- CSV imports. This row is the source of truth for an import in both modes (BullMQ or in-process):
-- the queue only carries its id. The final status and summary are written in the same transaction
-- as the import's claims, so "completed" means every valid row is stored, exactly once.
CREATE TABLE imports (
  id uuid PRIMARY KEY,
  company_id uuid NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  status text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'processing', 'completed', 'failed')),
  -- The uploaded file's name, sanitised, for display only; the object key is generated.
  file_name text NOT NULL CHECK (length(file_name) BETWEEN 1 AND 255),
  object_key text NOT NULL,
  size_bytes bigint NOT NULL CHECK (size_bytes >= 0),
  -- Data rows counted at upload (a progress estimate), then the exact count when finished.
  rows_total integer NOT NULL DEFAULT 0,
  rows_done integer NOT NULL DEFAULT 0,
  imported integer,
  failed integer,
  -- Row errors: [{row, messages: {column: [message]}}], in row order.
  errors jsonb,
  -- Why a failed import failed, written for the caller (never a driver message).
  message text,
  -- 'invalid_file' (answered as 422) or 'error' (the job failed for good).
  failure text CHECK (failure IN ('invalid_file', 'error')),
  attempts integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  finished_at timestamptz
);
CREATE INDEX imports_company_created_idx ON imports (company_id, created_at DESC, id DESC);
CREATE INDEX imports_unfinished_idx ON imports (created_at) WHERE status IN ('queued', 'processing');

-- Idempotency-Key: the first response to a (company, key) is kept for 24 hours and replayed for
-- a repeat of the same request. status_code is null while the first request is still running.
CREATE TABLE idempotency_keys (
  company_id uuid NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  key text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
  request_hash text NOT NULL,
  status_code integer,
  response jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (company_id, key)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);
