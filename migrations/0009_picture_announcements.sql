-- Purpose: pictures join the exact caches (docs/caching.md, "Pictures"). Every committed change to a row of
-- picture_cache is announced on fbs_changes like the changes of migration 0008, folded into the transaction's one
-- notification, so that an instance can keep a picture's description (ETag, freshness, URL; never the bytes) in
-- memory and answer a picture request or a 304 without PostgreSQL.
--
-- Token, added to those of migration 0008:
--   p<16 hex>                     one cached picture: the first 16 hex digits of
--                                 SHA-256(app_id || ':' || facebook_user_id || ':' || size_key). Two pictures whose
--                                 tokens collide only drop each other's entries.
-- A change that touches only the fill lease (fill_token, filling_until) is announced too: it is rare (a lease is
-- taken only for a picture that is not fresh) and saying nothing would make this trigger reason about columns.

CREATE FUNCTION fbs_picture_token(app_id text, facebook_user_id text, size_key text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT 'p' || left(encode(sha256(convert_to(app_id || ':' || facebook_user_id || ':' || size_key, 'UTF8')), 'hex'), 16)
$$;

CREATE FUNCTION fbs_picture_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        PERFORM fbs_note_changes(ARRAY[fbs_picture_token(OLD.app_id, OLD.facebook_user_id, OLD.size_key)]);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        PERFORM fbs_note_changes(ARRAY[fbs_picture_token(NEW.app_id, NEW.facebook_user_id, NEW.size_key)]);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER picture_cache_note_change AFTER INSERT OR UPDATE OR DELETE ON picture_cache
    FOR EACH ROW EXECUTE FUNCTION fbs_picture_changed();
CREATE CONSTRAINT TRIGGER picture_cache_announce_at_commit AFTER INSERT OR UPDATE OR DELETE ON picture_cache
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION fbs_flush_changes();
CREATE TRIGGER picture_cache_announce_truncate AFTER TRUNCATE ON picture_cache
    FOR EACH STATEMENT EXECUTE FUNCTION fbs_announce_all();
