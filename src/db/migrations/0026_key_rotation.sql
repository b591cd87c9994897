-- Issue 53, keys rotate without downtime. A webhook's secret is rotated: for 24 hours the secret
-- it replaced signs every delivery too (Claims-Signature then carries two v1 signatures).
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret text;
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_until timestamptz;
