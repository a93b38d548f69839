-- Purpose: tenants (apps with their Facebook app and encrypted secret) and the API keys they call with.

CREATE TABLE apps (
    id                   text PRIMARY KEY,
    name                 text NOT NULL UNIQUE,
    facebook_app_id      text NOT NULL UNIQUE,
    -- AES-256-GCM: nonce || ciphertext || tag, sealed with key `secret_key_id`, the app id as associated data.
    secret_key_id        text NOT NULL,
    secret_box           bytea NOT NULL,
    redirect_uris        text[] NOT NULL DEFAULT '{}',
    required_permissions text[] NOT NULL DEFAULT '{}',
    created_at           timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
    id         text PRIMARY KEY,
    app_id     text NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    -- SHA-256 of the whole key text; the key itself is never stored.
    key_hash   bytea NOT NULL,
    scopes     text[] NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);

CREATE INDEX api_keys_app_id_idx ON api_keys (app_id);
