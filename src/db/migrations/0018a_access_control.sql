-- Access control (DECISIONS, "Access control, abuse limits and the audit trail").

-- Roles: a viewer reads; a member also writes; an admin also manages people, tokens and webhooks.
ALTER TABLE users DROP CONSTRAINT IF EXISTS users_role_check;
ALTER TABLE users ADD CONSTRAINT users_role_check CHECK (role IN ('operator', 'admin', 'member', 'viewer'));

-- Token scopes: tokens made before scopes existed have all of them. New rows always name theirs.
ALTER TABLE api_tokens ADD COLUMN scopes text[] NOT NULL
  DEFAULT ARRAY['claims:read', 'claims:write', 'search', 'imports', 'alerts:read', 'logs:read']::text[];
ALTER TABLE api_tokens ALTER COLUMN scopes DROP DEFAULT;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_scopes_check CHECK (cardinality(scopes) >= 1);
-- Token expiry: null for tokens made before expiry existed (and "never" when no maximum is set).
ALTER TABLE api_tokens ADD COLUMN expires_at timestamptz;
-- Removing a person lists the tokens they made (their company's rows, one index range).
CREATE INDEX api_tokens_creator_idx ON api_tokens (created_by_user_id) WHERE created_by_user_id IS NOT NULL;

-- Who made a webhook, listed when that person is removed.
ALTER TABLE webhook_endpoints ADD COLUMN created_by_user_id uuid REFERENCES users (id) ON DELETE SET NULL;
CREATE INDEX webhook_endpoints_creator_idx ON webhook_endpoints (created_by_user_id) WHERE created_by_user_id IS NOT NULL;

-- Suspension by the operator: the company's tokens get 403 company_suspended, its people cannot sign in.
ALTER TABLE companies ADD COLUMN suspended_at timestamptz;
