-- Purpose: `session.expiring` once per deadline (docs/api-contract.md, "Events and webhooks"). Each standard
-- session remembers the deadline it was last warned about, per field, so that the warning is written at most once
-- per deadline: by the sweep or by a read, on any instance, across restarts.
--
-- A warning is one statement (PostgresSessionStore+Expiry.swift): it locks the due rows (FOR UPDATE SKIP LOCKED),
-- sets *_warned_for to the deadline and writes the event in the same transaction. A second instance or sweep
-- finds warned_for equal to the deadline and writes nothing. A re-extension moves token_expires_at (a
-- reauthorization moves data_access_expires_at) away from the warned value, which arms the warning again.

ALTER TABLE sessions ADD COLUMN expires_warned_for timestamptz;
ALTER TABLE sessions ADD COLUMN data_access_warned_for timestamptz;

-- What the sweep looks for: live standard sessions whose deadline has not been warned about, by deadline. The
-- predicates are the warning statement's own, so the planner uses these (and only unwarned rows are in them).
CREATE INDEX sessions_expiry_unwarned_idx ON sessions (token_expires_at)
    WHERE state <> 'closed' AND login_kind = 'standard' AND expires_warned_for IS DISTINCT FROM token_expires_at;
CREATE INDEX sessions_data_access_unwarned_idx ON sessions (data_access_expires_at)
    WHERE state <> 'closed' AND login_kind = 'standard'
      AND data_access_warned_for IS DISTINCT FROM data_access_expires_at;
