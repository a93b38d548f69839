-- Purpose: every committed change to what an instance may cache (a session, an owner's active account or list,
-- an API key) is announced on the channel fbs_changes, by triggers, in the transaction that makes it, so that
-- the exact caches of every instance (docs/caching.md, "Exact caches across instances") drop it before they
-- answer a request that arrived after the commit. No write path of the service and no operator's hand-written
-- SQL can forget: the tables announce themselves.
--
-- A transaction's announcements are folded into one notification, sent at commit: row triggers collect tokens in
-- a transaction-local setting (fbs.changes), and a deferred constraint trigger sends them when the transaction
-- commits. PostgreSQL serialises the commits of notifying transactions (a cluster-wide lock from PreCommit_Notify
-- to the end of the commit), so one NOTIFY per transaction is the least a correct scheme can cost.
--
-- Tokens, comma-separated in the payload:
--   s<session id>                 a session row
--   o<16 hex>                     an owner (the first 16 hex digits of SHA-256(app_id || ':' || owner)): its
--                                 list of sessions or its active account; a change of the active account also
--                                 announces the sessions it was and is (their `active` changed)
--   k<key id>                     an API key
--   *                             anything: an instance drops every cached entry (a TRUNCATE, or a transaction
--                                 whose tokens would not fit in one notification's 8000 bytes)
-- Subtransactions: a rolled-back savepoint rolls back its rows and its part of fbs.changes alike.

CREATE FUNCTION fbs_owner_token(app_id text, owner text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT 'o' || left(encode(sha256(convert_to(app_id || ':' || owner, 'UTF8')), 'hex'), 16)
$$;

-- Adds tokens to this transaction's pending announcement. Past 7,000 bytes it stops adding: the flush sends '*'.
CREATE FUNCTION fbs_note_changes(tokens text[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    pending text := coalesce(current_setting('fbs.changes', true), '');
BEGIN
    IF pending = '*' THEN
        RETURN;
    ELSIF pending = '' THEN
        pending := array_to_string(tokens, ',');
    ELSIF octet_length(pending) < 7000 THEN
        pending := pending || ',' || array_to_string(tokens, ',');
    ELSE
        pending := '*';
    END IF;
    PERFORM set_config('fbs.changes', pending, true);
END
$$;

-- Runs at commit (deferred constraint trigger, once per changed row): the first run sends the whole pending
-- announcement, deduplicated, and empties it; the others find it empty.
CREATE FUNCTION fbs_flush_changes() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    pending text := coalesce(current_setting('fbs.changes', true), '');
    payload text;
BEGIN
    IF pending <> '' THEN
        IF pending = '*' OR octet_length(pending) >= 7000 THEN
            payload := '*';
        ELSE
            SELECT string_agg(DISTINCT token, ',') INTO payload FROM unnest(string_to_array(pending, ',')) AS token;
        END IF;
        PERFORM set_config('fbs.changes', '', true);
        PERFORM pg_notify('fbs_changes', payload);
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION fbs_announce_all() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('fbs_changes', '*');
    RETURN NULL;
END
$$;

CREATE FUNCTION fbs_session_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        PERFORM fbs_note_changes(ARRAY['s' || OLD.id, fbs_owner_token(OLD.app_id, OLD.owner)]);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        PERFORM fbs_note_changes(ARRAY['s' || NEW.id, fbs_owner_token(NEW.app_id, NEW.owner)]);
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION fbs_owner_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- A session's `active` is its owner's active_session_id: the sessions it names are announced too.
    IF TG_OP <> 'INSERT' THEN
        PERFORM fbs_note_changes(
            ARRAY[fbs_owner_token(OLD.app_id, OLD.owner)] || coalesce(ARRAY['s' || OLD.active_session_id], '{}'));
    END IF;
    IF TG_OP <> 'DELETE' THEN
        PERFORM fbs_note_changes(
            ARRAY[fbs_owner_token(NEW.app_id, NEW.owner)] || coalesce(ARRAY['s' || NEW.active_session_id], '{}'));
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION fbs_api_key_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        PERFORM fbs_note_changes(ARRAY['k' || OLD.id]);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        PERFORM fbs_note_changes(ARRAY['k' || NEW.id]);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER sessions_note_change AFTER INSERT OR UPDATE OR DELETE ON sessions
    FOR EACH ROW EXECUTE FUNCTION fbs_session_changed();
CREATE CONSTRAINT TRIGGER sessions_announce_at_commit AFTER INSERT OR UPDATE OR DELETE ON sessions
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION fbs_flush_changes();
CREATE TRIGGER sessions_announce_truncate AFTER TRUNCATE ON sessions
    FOR EACH STATEMENT EXECUTE FUNCTION fbs_announce_all();

CREATE TRIGGER owners_note_change AFTER INSERT OR UPDATE OR DELETE ON owners
    FOR EACH ROW EXECUTE FUNCTION fbs_owner_changed();
CREATE CONSTRAINT TRIGGER owners_announce_at_commit AFTER INSERT OR UPDATE OR DELETE ON owners
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION fbs_flush_changes();
CREATE TRIGGER owners_announce_truncate AFTER TRUNCATE ON owners
    FOR EACH STATEMENT EXECUTE FUNCTION fbs_announce_all();

CREATE TRIGGER api_keys_note_change AFTER INSERT OR UPDATE OR DELETE ON api_keys
    FOR EACH ROW EXECUTE FUNCTION fbs_api_key_changed();
CREATE CONSTRAINT TRIGGER api_keys_announce_at_commit AFTER INSERT OR UPDATE OR DELETE ON api_keys
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION fbs_flush_changes();
CREATE TRIGGER api_keys_announce_truncate AFTER TRUNCATE ON api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION fbs_announce_all();
