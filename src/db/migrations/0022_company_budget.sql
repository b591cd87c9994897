-- A company's budget for all its API tokens together, beside each token's (DECISIONS, "Limits
-- everywhere"): `admin company:limits --company-per-minute`. NULL in either column: the setting's
-- default (RATE_LIMIT_PER_MINUTE, COMPANY_RATE_LIMIT_PER_MINUTE); 0: no limit for that company.
ALTER TABLE company_rate_limits ALTER COLUMN per_minute DROP NOT NULL;
ALTER TABLE company_rate_limits ADD COLUMN company_per_minute integer CHECK (company_per_minute >= 0);
