-- Sign-in that holds (issue 41): a second factor, single sign-on per company, one-time reset
-- links, and failed sign-ins counted in the database when there is no Redis.

-- The TOTP key is stored sealed (AES-256-GCM with ENCRYPTION_KEY), never in the clear. It counts
-- only once confirmed (totp_enabled_at); totp_last_step is the time step of the last code
-- accepted, so a code is accepted once.
ALTER TABLE users
  ADD COLUMN totp_secret_sealed text,
  ADD COLUMN totp_enabled_at timestamptz,
  ADD COLUMN totp_last_step bigint;

-- Single-use recovery codes: only a SHA-256 of each (they are 80 random bits, no salt needed).
CREATE TABLE user_recovery_codes (
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  code_hash text NOT NULL,
  used_at timestamptz,
  PRIMARY KEY (user_id, code_hash)
);

-- A company's admin can require a second factor of all its people.
ALTER TABLE companies ADD COLUMN require_second_factor boolean NOT NULL DEFAULT false;

-- OpenID Connect single sign-on, one provider per company. The client secret is sealed.
CREATE TABLE company_sso (
  company_id uuid PRIMARY KEY REFERENCES companies (id) ON DELETE CASCADE,
  issuer text NOT NULL CHECK (length(issuer) BETWEEN 8 AND 500),
  client_id text NOT NULL CHECK (length(client_id) BETWEEN 1 AND 255),
  client_secret_sealed text NOT NULL,
  sso_only boolean NOT NULL DEFAULT false,
  updated_at timestamptz NOT NULL DEFAULT now()
);
-- An email domain belongs to one company's provider at most.
CREATE TABLE company_sso_domains (
  domain text PRIMARY KEY CHECK (domain = lower(domain) AND length(domain) BETWEEN 3 AND 253),
  company_id uuid NOT NULL REFERENCES company_sso (company_id) ON DELETE CASCADE
);
CREATE INDEX company_sso_domains_company_idx ON company_sso_domains (company_id);

-- An admin's password reset: a one-time link (only its SHA-256 here), valid until expires_at.
CREATE TABLE password_resets (
  token_hash text PRIMARY KEY,
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);
CREATE INDEX password_resets_user_idx ON password_resets (user_id);

-- Failed sign-ins and codes per key (an email's or an address's hash) and fixed window, when
-- there is no Redis: one row per key and window, incremented in one statement.
CREATE TABLE sign_in_failures (
  key text NOT NULL,
  window_start bigint NOT NULL,
  failures integer NOT NULL,
  PRIMARY KEY (key, window_start)
);
CREATE INDEX sign_in_failures_window_idx ON sign_in_failures (window_start);
