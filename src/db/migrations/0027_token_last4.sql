-- Issue 54: token lists show each token's last 4 characters (csk_…abcd, as Stripe does), kept
-- when the token is made. Tokens made before have none (only their hash is kept): lists show —.
ALTER TABLE api_tokens ADD COLUMN token_last4 text CHECK (token_last4 ~ '^[0-9A-Za-z_-]{4}$');
