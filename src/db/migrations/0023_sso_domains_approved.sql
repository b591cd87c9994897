-- SSO domains are approved, not claimed (issue 52): an admin asks for an email domain; it covers
-- sign-ins only once the operator approves it (approved_at). The provider's discovery document
-- is fetched when the settings are saved and kept (metadata), so a sign-in never fetches it.
ALTER TABLE company_sso_domains
  ADD COLUMN asked_at timestamptz NOT NULL DEFAULT now(),
  ADD COLUMN approved_at timestamptz;

-- The domains saved before this rule: approved when nobody of another company and no operator
-- has an email of the domain (what an approval would have checked), otherwise left as asked, for
-- the operator to look at (the people of such a company sign in with their passwords meanwhile).
UPDATE company_sso_domains d SET approved_at = now()
 WHERE NOT EXISTS (
   SELECT 1 FROM users u
    WHERE lower(split_part(u.email, '@', 2)) = d.domain
      AND (u.company_id IS NULL OR u.company_id <> d.company_id)
 );

-- The discovery document, kept; null for settings saved before this rule: their sign-ins say
-- the settings must be saved again (which fetches it), rather than fetch it at a sign-in.
ALTER TABLE company_sso ADD COLUMN metadata jsonb;

-- The approval's check: whose emails use a domain.
CREATE INDEX users_email_domain_idx ON users (lower(split_part(email, '@', 2)));
