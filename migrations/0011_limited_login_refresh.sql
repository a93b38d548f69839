-- Purpose: Limited Login refresh (iOS SDK 18.1, PUT /v1/sessions/{id}/authentication-token): each session keeps the iat of its stored AuthenticationToken, so that a refresh is taken only with a later token, and the device-key thumbprint (cnf.jkt) the token is bound to (docs/limited-login.md, "Refresh").

-- The stored token's `iat`. A refresh replaces the token with one UPDATE whose WHERE clause says
-- `token_issued_at < <the new token's iat>`: of any number of refreshes racing with one token, on any number of
-- instances, the first to commit moves token_issued_at to that iat and every other one then matches no row
-- (READ COMMITTED re-checks the WHERE clause against the row the winner committed), so it is refused as
-- `not_newer`. A replay of the stored token, or an older token, matches no row either. NULL for standard sessions.
ALTER TABLE sessions ADD COLUMN token_issued_at timestamptz;

-- The JWK thumbprint of the device key the stored token is bound to (its `cnf.jkt` claim), NULL when the token
-- named none or was stored before this migration. A refresh may bring another one (the SDK re-binds when it makes
-- a new device key): it is stored, and the `token.changed` event says `binding_changed`.
ALTER TABLE sessions ADD COLUMN token_binding text;

-- Limited sessions stored before this migration have no recorded iat, and their tokens are encrypted, so it cannot
-- be read here. The backfill takes the time the service stored the token (token_refreshed_at, else created_at).
-- That is conservative: a token is always stored after it was issued, so this is at or after the real iat, and a
-- refresh is therefore never taken with a token older than the stored one. The price is that a refreshed token
-- issued within the seconds between the old token's iat and its storing would be refused as not_newer; the SDK
-- refreshes at most daily, so such a token does not occur in practice.
UPDATE sessions SET token_issued_at = coalesce(token_refreshed_at, created_at) WHERE login_kind = 'limited';
