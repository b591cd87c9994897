-- Webhooks: endpoints per company and an outbox of deliveries. A delivery row is written in the
-- same transaction as the status change it reports, so no event is lost when a process dies; the
-- deliverer (the worker, or the server without REDIS_URL) claims due rows with a lease.
CREATE TABLE webhook_endpoints (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  company_id uuid NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  url text NOT NULL CHECK (length(url) BETWEEN 8 AND 2000),
  -- The signing key must be readable to sign each delivery (HMAC), so it is kept as given out.
  secret text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_company_idx ON webhook_endpoints (company_id, created_at DESC);

CREATE TABLE webhook_deliveries (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  company_id uuid NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  endpoint_id uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  -- One delivery per endpoint and event: writing the same event twice is a no-op.
  event_key text NOT NULL,
  event_id uuid NOT NULL,
  event_type text NOT NULL,
  -- The exact body sent (and signed), the same bytes on every attempt.
  body text NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  locked_until timestamptz,
  last_status_code integer,
  last_error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  UNIQUE (endpoint_id, event_key)
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_company_idx ON webhook_deliveries (company_id, created_at DESC);
