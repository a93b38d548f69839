-- Purpose: the audit log (docs/api-contract.md, "Audit log"): who read a decrypted token, who revoked a session,
-- and every admin command with the OS user who ran it. Append-only, and enforced here: a trigger refuses every
-- UPDATE, DELETE and TRUNCATE, except on the one deletion path that the sweep takes for retention,
-- fbs_prune_audit(retention_days) below, which may delete only entries past retention.
--
-- No entry holds a token, a secret or a key: actor and target name ids (a key's id, never its text), names and
-- hosts. app_id is the app an entry concerns (GET /v1/audit shows a key the entries of its own app, and those of
-- no app), deliberately without a foreign key: a cascade would be a second deletion path.

CREATE TABLE audit_log (
    id         bigserial PRIMARY KEY,
    -- The writing transaction, for cursors that never skip an entry that commits late (as events.tx).
    tx         xid8 NOT NULL DEFAULT pg_current_xact_id(),
    at         timestamptz NOT NULL DEFAULT now(),
    app_id     text,
    action     text NOT NULL CHECK (action ~ '^[a-z]+(\.[a-z]+)+$'),
    -- {"kind": "key", "id": ...} or {"kind": "cli", "user": ...}
    actor      jsonb NOT NULL CHECK (jsonb_typeof(actor) = 'object' AND actor ? 'kind'),
    -- {"kind": "session" | "app" | "key" | "webhook" | "keyring", ...}
    target     jsonb NOT NULL CHECK (jsonb_typeof(target) = 'object' AND target ? 'kind'),
    -- The HTTP request's id (X-Request-Id) for entries written by a route; null for commands.
    request_id text CHECK (request_id IS NULL OR length(request_id) BETWEEN 1 AND 128)
);

CREATE INDEX audit_log_by_app ON audit_log (app_id, tx, id);
CREATE INDEX audit_log_by_time ON audit_log (at);

-- The one deletion path. It marks its own transaction (set_config(..., true) lasts to the transaction's end, and
-- is cleared again before returning) with the retention it deletes by; the trigger lets a row go only while the
-- mark is on, only with a retention of at least one day, and only when the row is older than that retention.
CREATE FUNCTION fbs_prune_audit(retention_days integer) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    removed bigint;
BEGIN
    IF retention_days IS NULL OR retention_days < 1 THEN
        RAISE EXCEPTION 'fbs_prune_audit: retention must be at least 1 day, not %', retention_days
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM set_config('fbs.audit_prune', 'on', true);
    PERFORM set_config('fbs.audit_retention_days', retention_days::text, true);
    DELETE FROM audit_log WHERE at < now() - make_interval(days => retention_days);
    GET DIAGNOSTICS removed = ROW_COUNT;
    PERFORM set_config('fbs.audit_prune', 'off', true);
    PERFORM set_config('fbs.audit_retention_days', '', true);
    RETURN removed;
END
$$;

CREATE FUNCTION fbs_audit_log_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    retention_days integer;
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('fbs.audit_prune', true) = 'on' THEN
        retention_days := nullif(current_setting('fbs.audit_retention_days', true), '')::integer;
        IF retention_days >= 1 AND OLD.at < now() - make_interval(days => retention_days) THEN
            RETURN OLD;
        END IF;
    END IF;
    RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege',
              HINT = 'Entries past FBS_AUDIT_RETENTION are deleted by fbs_prune_audit, run by the sweep.';
END
$$;

CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION fbs_audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION fbs_audit_log_append_only();
