-- Purpose: webhooks (URLs that get each feed event, signed), their feed cursors, and each delivery's outcome.

CREATE TABLE webhooks (
    id            text PRIMARY KEY,
    app_id        text NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    url           text NOT NULL,
    -- The HMAC-SHA256 signing secret. AES-256-GCM: nonce || ciphertext || tag under key `secret_key_id`, the
    -- webhook id as associated data.
    secret_key_id text NOT NULL,
    secret_box    bytea NOT NULL,
    -- How far the feed has been turned into deliveries: the (tx, id) of the last event enqueued, read with the
    -- same visibility rule as GET /v1/events, so no event is skipped.
    cursor_tx     xid8 NOT NULL DEFAULT '0',
    cursor_id     bigint NOT NULL DEFAULT 0,
    created_at    timestamptz NOT NULL DEFAULT now(),
    -- Set by `webhook remove`: nothing more is enqueued or sent; the history stays.
    disabled_at   timestamptz
);

CREATE INDEX webhooks_app_idx ON webhooks (app_id);

-- One row per (webhook, event): retried until a 2xx answer, at least once.
CREATE TABLE webhook_deliveries (
    webhook_id      text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id        bigint NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    attempts        integer NOT NULL DEFAULT 0,
    -- When the next attempt is due. A sender claims a row by moving this forward by a lease, so a sender that
    -- dies mid-request leaves it to be retried after the lease.
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_attempt_at timestamptz,
    -- The HTTP status of the last answer, or null when there was none (connection failure, timeout).
    last_status     integer,
    -- What went wrong last, without URL, secret or body.
    last_error      text,
    delivered_at    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (webhook_id, event_id)
);

CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE delivered_at IS NULL;
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_id);
