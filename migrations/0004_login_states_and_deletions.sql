-- Purpose: login-URL states for the OAuth code flow (hashed, single use, 10 minutes) and Facebook data-deletion requests.

-- A state is bound to app, owner, redirect URI and slot. Only the SHA-256 of the state text is stored, so a
-- database read yields no usable state. Using one sets used_at in a single conditional UPDATE.
CREATE TABLE login_states (
    state_hash   bytea PRIMARY KEY CHECK (octet_length(state_hash) = 32),
    app_id       text NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    owner        text NOT NULL,
    redirect_uri text NOT NULL,
    slot         integer CHECK (slot >= 0),
    scopes       text[] NOT NULL DEFAULT '{}',
    auth_type    text CHECK (auth_type IN ('rerequest', 'reauthorize', 'reauthenticate')),
    -- Sent with auth_type=reauthenticate; Facebook echoes it in debug_token metadata.
    auth_nonce   text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    used_at      timestamptz
);

CREATE INDEX login_states_expiry_idx ON login_states (expires_at);

-- Data-deletion requests Facebook sent (POST /v1/facebook/data-deletion). The deletion itself happens in the
-- same transaction, so a request is recorded completed. Nothing about the user is kept here: the status page
-- shows the code, the status and the times only.
CREATE TABLE data_deletions (
    confirmation_code text PRIMARY KEY,
    app_id            text NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    status            text NOT NULL CHECK (status IN ('completed')),
    requested_at      timestamptz NOT NULL DEFAULT now(),
    completed_at      timestamptz
);
