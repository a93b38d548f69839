-- Purpose: Facebook Limited Login: every session's login kind, the single-use nonces logins must carry, and the kind of each owed revocation.

-- How the person logged in: 'standard' (a Graph access token) or 'limited' (Limited Login's AuthenticationToken,
-- kept in token_box like any token; Graph never sees it).
ALTER TABLE sessions ADD COLUMN login_kind text NOT NULL DEFAULT 'standard'
    CHECK (login_kind IN ('standard', 'limited'));

-- The sweep re-validates only standard sessions.
DROP INDEX sessions_due_idx;
CREATE INDEX sessions_due_idx ON sessions (validated_at) WHERE state <> 'closed' AND login_kind = 'standard';

-- A revocation of a limited session goes to the uninstall endpoint instead of DELETE /me/permissions.
ALTER TABLE pending_revocations ADD COLUMN login_kind text NOT NULL DEFAULT 'standard'
    CHECK (login_kind IN ('standard', 'limited'));

-- Nonces for POST /v1/login-nonces: bound to app and owner (and a slot, if asked), 10 minutes, single use. Only the
-- SHA-256 of the nonce is stored. A login uses its nonce in the transaction that stores the session, with one
-- conditional UPDATE, so two logins racing with one nonce cannot both win.
CREATE TABLE login_nonces (
    nonce_hash bytea PRIMARY KEY CHECK (octet_length(nonce_hash) = 32),
    app_id     text NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    owner      text NOT NULL,
    slot       integer CHECK (slot >= 0),
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);

CREATE INDEX login_nonces_expiry_idx ON login_nonces (expires_at);
