-- The audit trail: every administrative act (DECISIONS, "Audit trail"), written in the act's own
-- transaction by src/db/audit-repository.ts. Append-only: rows are inserted, never changed; only
-- the daily retention purge deletes them (AUDIT_RETENTION_DAYS). No foreign key to companies: the
-- record of an act outlives what it was done to.
CREATE TABLE audit_events (
  -- Time-ordered (newId(), UUID v7), as the other tables' ids.
  id uuid PRIMARY KEY,
  -- Null for an act of the operator that concerns no company.
  company_id uuid,
  action text NOT NULL CHECK (length(action) BETWEEN 1 AND 64),
  actor_type text NOT NULL CHECK (actor_type IN ('person', 'token', 'operator', 'system')),
  actor_id text,
  actor_name text NOT NULL,
  target_type text,
  target_id text,
  target_name text,
  ip text,
  request_id text,
  created_at timestamptz NOT NULL DEFAULT now()
);
-- A company's events newest first (GET /api/v1/audit-events, Settings > Audit log), keyset-paged.
CREATE INDEX audit_events_company_created_idx ON audit_events (company_id, created_at DESC, id DESC);
-- The same with ?action=.
CREATE INDEX audit_events_company_action_created_idx ON audit_events (company_id, action, created_at DESC, id DESC);
-- The operator's view across companies, and the retention purge's range.
CREATE INDEX audit_events_created_idx ON audit_events (created_at DESC, id DESC);
CREATE INDEX audit_events_action_created_idx ON audit_events (action, created_at DESC, id DESC);

-- Append-only: an UPDATE is refused whoever runs it.
CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_events is append-only';
END;
$$;
CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
  FOR EACH ROW EXECUTE FUNCTION audit_events_append_only();
