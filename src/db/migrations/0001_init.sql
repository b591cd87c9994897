-- Companies, the people who sign in to the dashboard, and their API tokens.
CREATE TABLE companies (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX companies_name_key ON companies (lower(name));

-- company_id is null for the operator of the service, who belongs to no company.
CREATE TABLE users (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  company_id uuid REFERENCES companies (id) ON DELETE CASCADE,
  email text NOT NULL CHECK (length(email) BETWEEN 3 AND 254),
  password_hash text NOT NULL,
  role text NOT NULL CHECK (role IN ('operator', 'admin', 'member')),
  created_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((role = 'operator') = (company_id IS NULL))
);
CREATE UNIQUE INDEX users_email_key ON users (lower(email));
CREATE INDEX users_company_idx ON users (company_id);

-- Only a SHA-256 of the token is stored; prefix is the first characters, for recognising it in a list.
CREATE TABLE api_tokens (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  company_id uuid NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
  token_hash text NOT NULL UNIQUE,
  token_prefix text NOT NULL,
  created_by_user_id uuid REFERENCES users (id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);
CREATE INDEX api_tokens_company_idx ON api_tokens (company_id, created_at DESC);

-- A person, resolved from date of birth and identity documents.
CREATE TABLE clients (
  id uuid PRIMARY KEY,
  first_name text NOT NULL,
  last_name text NOT NULL,
  date_of_birth date NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- A document belongs to exactly one client. The number is kept only as an HMAC-SHA-256 with
-- DOCUMENT_HASH_KEY of its normalized form: matching works, a copied database reveals nothing.
CREATE TABLE identity_documents (
  doc_type text NOT NULL CHECK (doc_type IN ('passport', 'national_id', 'alien_registration')),
  number_hash text NOT NULL,
  client_id uuid NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (doc_type, number_hash)
);
-- Every claim read-back lists the client's document types.
CREATE INDEX identity_documents_client_idx ON identity_documents (client_id);

CREATE TABLE claims (
  id uuid PRIMARY KEY,
  company_id uuid NOT NULL REFERENCES companies (id),
  client_id uuid NOT NULL REFERENCES clients (id),
  claim_date date NOT NULL,
  claim_type text CHECK (claim_type IN ('accident', 'theft', 'other')),
  amount numeric(12, 2) CHECK (amount >= 0),
  currency text NOT NULL DEFAULT 'EUR' CHECK (currency = 'EUR'),
  is_at_fault boolean,
  vehicle_registration text NOT NULL CHECK (length(vehicle_registration) BETWEEN 1 AND 20),
  source text NOT NULL CHECK (source IN ('api', 'bulk_import', 'assisted')),
  status text NOT NULL CHECK (status IN ('filed', 'under_investigation', 'settled', 'closed', 'disputed')),
  import_id uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX claims_plate_date_idx ON claims (vehicle_registration, claim_date DESC);
CREATE INDEX claims_company_created_idx ON claims (company_id, created_at DESC, id DESC);
CREATE INDEX claims_company_status_created_idx ON claims (company_id, status, created_at DESC, id DESC);
CREATE INDEX claims_client_idx ON claims (client_id);
CREATE INDEX claims_import_idx ON claims (import_id) WHERE import_id IS NOT NULL;

-- Every status change: who, when, from, to.
CREATE TABLE claim_status_changes (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  claim_id uuid NOT NULL REFERENCES claims (id) ON DELETE CASCADE,
  from_status text NOT NULL,
  to_status text NOT NULL,
  changed_by_token_id uuid REFERENCES api_tokens (id) ON DELETE SET NULL,
  changed_by_user_id uuid REFERENCES users (id) ON DELETE SET NULL,
  changed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX claim_status_changes_claim_idx ON claim_status_changes (claim_id, changed_at);

-- Settings the service keeps about itself (the document-hash key fingerprint).
CREATE TABLE app_meta (
  key text PRIMARY KEY,
  value text NOT NULL
);
