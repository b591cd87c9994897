-- Web dashboard sessions. The session id is kept only as a SHA-256, so a copy of this table does
-- not let anyone sign in. Deleting a person deletes their sessions (they are signed out at once).
CREATE TABLE web_sessions (
  sid_hash text PRIMARY KEY,
  user_id uuid REFERENCES users (id) ON DELETE CASCADE,
  data jsonb NOT NULL,
  expires_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX web_sessions_expires_idx ON web_sessions (expires_at);
CREATE INDEX web_sessions_user_idx ON web_sessions (user_id) WHERE user_id IS NOT NULL;
