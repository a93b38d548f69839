-- Purpose: sessions (one Facebook account of one owner, in a slot), each owner's active session, and the change feed.

CREATE TABLE sessions (
    id                     text PRIMARY KEY,
    app_id                 text NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    owner                  text NOT NULL,
    slot                   integer NOT NULL CHECK (slot >= 0),
    facebook_user_id       text NOT NULL,
    state                  text NOT NULL CHECK (state IN ('open', 'token_loaded', 'closed')),
    closed_reason          text,
    closed_at              timestamptz,
    -- reauthorize (data access expired) or rerequest (required permissions declined); null otherwise.
    action_required        text,
    -- AES-256-GCM: nonce || ciphertext || tag under key `token_key_id`, the session id as associated data.
    token_key_id           text,
    token_box              bytea,
    token_expires_at       timestamptz,
    data_access_expires_at timestamptz,
    token_refreshed_at     timestamptz,
    permissions            text[] NOT NULL DEFAULT '{}',
    declined_permissions   text[] NOT NULL DEFAULT '{}',
    expired_permissions    text[] NOT NULL DEFAULT '{}',
    profile                jsonb,
    profile_refreshed_at   timestamptz,
    validated_at           timestamptz,
    -- A validation in progress (any instance) holds this lease; others wait for its result.
    validating_until       timestamptz,
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now(),
    CHECK ((state = 'closed') = (closed_reason IS NOT NULL)),
    CHECK (state = 'closed' OR token_box IS NOT NULL),
    CHECK (state <> 'closed' OR (token_box IS NULL AND profile IS NULL))
);

-- At most one live session per slot, and per Facebook user, of an owner.
CREATE UNIQUE INDEX sessions_live_slot_idx ON sessions (app_id, owner, slot) WHERE state <> 'closed';
CREATE UNIQUE INDEX sessions_live_user_idx ON sessions (app_id, owner, facebook_user_id) WHERE state <> 'closed';
CREATE INDEX sessions_owner_idx ON sessions (app_id, owner);
CREATE INDEX sessions_facebook_user_idx ON sessions (app_id, facebook_user_id) WHERE state <> 'closed';
CREATE INDEX sessions_due_idx ON sessions (validated_at) WHERE state <> 'closed';

CREATE TABLE owners (
    app_id            text NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    owner             text NOT NULL,
    active_session_id text REFERENCES sessions (id),
    PRIMARY KEY (app_id, owner)
);

-- The change feed. Readers see an event only once every transaction that started before it has ended
-- (tx < pg_snapshot_xmin), and page by (tx, id), so a cursor never skips an event committed late.
CREATE TABLE events (
    id         bigserial PRIMARY KEY,
    tx         xid8 NOT NULL DEFAULT pg_current_xact_id(),
    app_id     text NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    type       text NOT NULL,
    session_id text,
    owner      text,
    at         timestamptz NOT NULL DEFAULT now(),
    data       jsonb NOT NULL DEFAULT '{}'
);

CREATE INDEX events_feed_idx ON events (app_id, tx, id);

-- Revocations (DELETE /me/permissions) that Graph could not take at logout; retried in the background. The token
-- is kept encrypted here, bound to the session id, until Graph accepts the revocation.
CREATE TABLE pending_revocations (
    session_id   text PRIMARY KEY,
    app_id       text NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    token_key_id text NOT NULL,
    token_box    bytea NOT NULL,
    attempts     integer NOT NULL DEFAULT 0,
    next_attempt timestamptz NOT NULL DEFAULT now(),
    created_at   timestamptz NOT NULL DEFAULT now()
);
