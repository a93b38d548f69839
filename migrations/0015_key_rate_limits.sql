-- Purpose: rate limits per API key (docs/api-contract.md, "Rate limits"): each key may carry a limit in requests per second, enforced by each instance with a token bucket of burst 2 x the limit; NULL is unlimited, the default.

-- A positive whole number of requests per second; NULL: no limit. `fbsessiond key add --rate N` and
-- `fbsessiond key update KEY_ID --rate N|none` write it (the CLI also refuses more than 1,000,000).
-- Changing it is an UPDATE of api_keys, which the trigger of migration 0008 announces as `k<id>`: every instance
-- with an exact cache forgets the key's cached app, scopes and limit before it answers a request that arrived
-- after the commit.
ALTER TABLE api_keys ADD COLUMN rate_limit integer CHECK (rate_limit > 0);
