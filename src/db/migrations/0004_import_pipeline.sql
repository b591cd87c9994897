-- The import pipeline: chunk commits with a ledger, a `cancelled` status, the history of status
-- changes, and what a failed or cancelled import leaves to remove.

ALTER TABLE imports DROP CONSTRAINT IF EXISTS imports_status_check;
ALTER TABLE imports ADD CONSTRAINT imports_status_check
  CHECK (status IN ('queued', 'processing', 'completed', 'failed', 'cancelled'));

-- Every change of status with its time, oldest first: [{"status": "queued", "at": "..."}, ...].
ALTER TABLE imports ADD COLUMN history jsonb NOT NULL DEFAULT '[]'::jsonb;
-- Set by POST /imports/{id}/cancel while the import is processing: the worker stops after the
-- chunk it is writing and moves the import to `cancelled`.
ALTER TABLE imports ADD COLUMN cancel_requested_at timestamptz;
-- The file's header names in their order (for the failed rows' file).
ALTER TABLE imports ADD COLUMN columns text[];
-- When the claims of a failed or cancelled import have all been removed.
ALTER TABLE imports ADD COLUMN claims_purged_at timestamptz;

UPDATE imports
   SET history = jsonb_build_array(jsonb_build_object('status', 'queued', 'at', to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))
 WHERE history = '[]'::jsonb;

-- A failed or cancelled import whose claims are still to be removed.
CREATE INDEX imports_purge_idx ON imports (finished_at) WHERE status IN ('failed', 'cancelled') AND claims_purged_at IS NULL;

-- The ledger: one row per committed chunk, written in the chunk's own transaction. A job that
-- starts again goes on after the last chunk here; the summary is built from these rows.
CREATE TABLE import_chunks (
  import_id uuid NOT NULL REFERENCES imports (id) ON DELETE CASCADE,
  chunk_no integer NOT NULL CHECK (chunk_no >= 0),
  -- Spreadsheet row numbers of the chunk's first and last data rows.
  first_row integer NOT NULL,
  last_row integer NOT NULL,
  -- Data rows in the chunk, and how many of them were stored and failed.
  rows_done integer NOT NULL CHECK (rows_done >= 0),
  imported integer NOT NULL CHECK (imported >= 0),
  failed integer NOT NULL CHECK (failed >= 0),
  -- The chunk's row errors, in row order: [{row, messages: {column: [message]}}].
  errors jsonb NOT NULL DEFAULT '[]'::jsonb,
  -- The failed rows' cells as read, id_number left empty: [{row, cells: [...]}].
  failed_rows jsonb NOT NULL DEFAULT '[]'::jsonb,
  committed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (import_id, chunk_no)
);
