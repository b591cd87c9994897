-- The audit trail cannot be rewritten (DECISIONS, "Access, hardened"): the database refuses
-- UPDATE, DELETE and TRUNCATE on audit_events except through the retention purge's one function
-- (audit_events_purge); each event carries `hash`, SHA-256 over its content and the previous
-- event's hash in its company's chain (the operator's chain for events of no company), made by
-- the INSERT's own trigger, so every writer chains and the write stays one statement.
-- `admin audit:verify` recomputes the chains (src/domain/audit/audit-chain.ts mirrors
-- audit_event_content below: change both together, or never).

-- What an event may say besides its actor and target: the sign-in's method, what was exported, the
-- purge's anchors. Never a secret (as the rest of the event).
ALTER TABLE audit_events ADD COLUMN data jsonb;
-- Its place in its chain (1, 2, ...), and the chained hash (hex).
ALTER TABLE audit_events ADD COLUMN chain_seq bigint;
ALTER TABLE audit_events ADD COLUMN hash text;

-- One row per chain: a company's id, or 'operator'. The head (newest event's seq, hash, time and
-- id) is locked by each insert of the chain until its transaction ends, so concurrent writers of
-- one company line up instead of forking the chain. The anchor is the newest event the purge
-- removed (its seq and hash): verification of what remains starts there.
CREATE TABLE audit_chains (
  chain text PRIMARY KEY,
  seq bigint NOT NULL,
  hash text,
  head_at timestamptz,
  event_id uuid,
  anchor_seq bigint,
  anchor_hash text
);

-- One field of the canonical content: its length in UTF-8 bytes, a colon and the text; `~` for null.
CREATE FUNCTION audit_field(v text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN v IS NULL THEN '~' ELSE octet_length(convert_to(v, 'UTF8'))::text || ':' || v END
$$;

-- The canonical content of an event, in a fixed order of fields.
CREATE FUNCTION audit_event_content(e audit_events) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT audit_field(e.chain_seq::text) || audit_field(e.id::text) || audit_field(e.company_id::text)
      || audit_field(e.action) || audit_field(e.actor_type) || audit_field(e.actor_id) || audit_field(e.actor_name)
      || audit_field(e.target_type) || audit_field(e.target_id) || audit_field(e.target_name)
      || audit_field(e.ip) || audit_field(e.request_id) || audit_field(e.data::text)
      || audit_field(to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))
$$;

-- SHA-256 (hex) over the previous hash (as a field) and the event's content.
CREATE FUNCTION audit_event_hash(prev text, e audit_events) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT encode(sha256(convert_to(audit_field(prev) || audit_event_content(e), 'UTF8')), 'hex')
$$;

-- The events written before chains existed: chained in the order they were written, per company.
DO $$
DECLARE
  r audit_events;
  cur text := NULL;
  prev text;
  n bigint;
  ids uuid[] := '{}';
  seqs bigint[] := '{}';
  hashes text[] := '{}';
BEGIN
  FOR r IN SELECT * FROM audit_events ORDER BY coalesce(company_id::text, 'operator'), created_at, id LOOP
    IF cur IS DISTINCT FROM coalesce(r.company_id::text, 'operator') THEN
      cur := coalesce(r.company_id::text, 'operator');
      prev := NULL;
      n := 0;
    END IF;
    n := n + 1;
    r.chain_seq := n;
    prev := audit_event_hash(prev, r);
    ids := ids || r.id;
    seqs := seqs || n;
    hashes := hashes || prev;
  END LOOP;
  UPDATE audit_events e SET chain_seq = u.seq, hash = u.hash FROM unnest(ids, seqs, hashes) AS u(id, seq, hash) WHERE e.id = u.id;
END;
$$;
INSERT INTO audit_chains (chain, seq, hash, head_at, event_id)
SELECT DISTINCT ON (coalesce(company_id::text, 'operator')) coalesce(company_id::text, 'operator'), chain_seq, hash, created_at, id
  FROM audit_events ORDER BY coalesce(company_id::text, 'operator'), chain_seq DESC;
ALTER TABLE audit_events ALTER COLUMN chain_seq SET NOT NULL;
ALTER TABLE audit_events ALTER COLUMN hash SET NOT NULL;
-- A chain in order (audit:verify), a page at a time.
CREATE INDEX audit_events_chain_idx ON audit_events (company_id, chain_seq);

-- Every insert chains: the chain's head locked (made for a chain's first event), the event's seq
-- and hash computed, the head moved. The time never goes back within a chain, so the purge (by
-- time) always removes a chain's oldest events first.
CREATE FUNCTION audit_events_chain() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  k text := coalesce(NEW.company_id::text, 'operator');
  head audit_chains;
BEGIN
  INSERT INTO audit_chains AS c (chain, seq) VALUES (k, 0)
    ON CONFLICT (chain) DO UPDATE SET seq = c.seq
    RETURNING c.* INTO head;
  NEW.chain_seq := head.seq + 1;
  NEW.created_at := greatest(coalesce(NEW.created_at, now()), head.head_at);
  NEW.hash := audit_event_hash(head.hash, NEW);
  UPDATE audit_chains SET seq = NEW.chain_seq, hash = NEW.hash, head_at = NEW.created_at, event_id = NEW.id WHERE chain = k;
  RETURN NEW;
END;
$$;
CREATE TRIGGER audit_events_chain BEFORE INSERT ON audit_events
  FOR EACH ROW EXECUTE FUNCTION audit_events_chain();

-- UPDATE and TRUNCATE are refused whoever runs them; DELETE too, but inside audit_events_purge.
-- (A session that could set the purge's flag itself could as well drop these triggers: they stop
-- mistakes and the service's own code; a rewrite by hand is what the chain shows.)
CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' AND current_setting('claims.audit_purge', true) = 'on' THEN
    RETURN NULL;
  END IF;
  RAISE EXCEPTION 'audit_events is append-only: % is refused (only the retention purge removes events)', TG_OP;
END;
$$;
DROP TRIGGER audit_events_no_update ON audit_events;
CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
  FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only();
CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events
  FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only();
CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
  FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only();

-- The retention purge, the one way events go: at most `p_max_rows` events created before `p_before`
-- (the service passes now - AUDIT_RETENTION_DAYS), oldest first, so each chain loses a prefix.
-- Each chain's anchor becomes its newest removed event, and the purge records itself in the
-- operator's chain (`data.purged`, target `audit_events`) with every chain's anchor, from which
-- verification starts. The count removed.
CREATE FUNCTION audit_events_purge(p_before timestamptz, p_max_rows int, p_event_id uuid, p_actor_type text, p_actor_id text, p_actor_name text)
  RETURNS int LANGUAGE plpgsql AS $$
DECLARE
  n int;
BEGIN
  PERFORM set_config('claims.audit_purge', 'on', true);
  WITH gone AS (
    DELETE FROM audit_events WHERE id IN (
      SELECT e.id FROM audit_events e WHERE e.created_at < p_before
       ORDER BY e.created_at, e.chain_seq LIMIT p_max_rows)
    RETURNING company_id, chain_seq, hash
  ), newest AS (
    SELECT DISTINCT ON (g.company_id) coalesce(g.company_id::text, 'operator') AS chain, g.chain_seq, g.hash
      FROM gone g ORDER BY g.company_id, g.chain_seq DESC
  ), anchored AS (
    UPDATE audit_chains c SET anchor_seq = w.chain_seq, anchor_hash = w.hash FROM newest w WHERE c.chain = w.chain RETURNING 1
  )
  SELECT count(*)::int INTO n FROM gone;
  PERFORM set_config('claims.audit_purge', '', true);
  IF n > 0 THEN
    INSERT INTO audit_events (id, company_id, action, actor_type, actor_id, actor_name, target_type, target_id, target_name, data)
    SELECT p_event_id, NULL, 'data.purged', p_actor_type, p_actor_id,
           p_actor_name, 'audit_events', NULL,
           n || ' audit events created before ' || to_char(p_before AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
           jsonb_build_object(
             'removed', n,
             'chains', (SELECT jsonb_object_agg(c.chain, jsonb_build_object('seq', c.anchor_seq, 'hash', c.anchor_hash))
                          FROM audit_chains c WHERE c.anchor_seq IS NOT NULL));
  END IF;
  RETURN n;
END;
$$;
