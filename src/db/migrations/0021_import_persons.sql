-- Issue 43: an import decides and creates its persons (clients and their documents) in a
-- transaction of their own, before the chunk's claims, so that no chunk waits for another's. The
-- persons a chunk created are noted here in that same transaction, so that a failed or cancelled
-- import removes those it left without a claim (a concurrent submission's claim keeps one).
CREATE TABLE import_persons (
  import_id uuid NOT NULL REFERENCES imports (id) ON DELETE CASCADE,
  chunk_no integer NOT NULL,
  client_ids uuid[] NOT NULL,
  PRIMARY KEY (import_id, chunk_no)
);
