-- Purpose: Facebook Login for Business (docs/login-flow.md, "Facebook Login for Business"). A session keeps
-- debug_token's granular_scopes from its last login (each permission with the asset ids it was granted on), and a
-- login-URL state remembers the Login for Business configuration its dialog was opened with.
--
-- sessions.granular_scopes: a JSON array of {"scope": text, "target_ids"?: [text]} exactly as debug_token listed
-- it ("target_ids" left out when Facebook left it out: the permission applies to every object). '[]' for Limited
-- Login sessions and for closed ones: closing erases it with the token and the profile.

ALTER TABLE sessions ADD COLUMN granular_scopes jsonb NOT NULL DEFAULT '[]'
    CHECK (jsonb_typeof(granular_scopes) = 'array');

-- Closing erases the assets, whoever closes: a trigger clears them rather than a CHECK refusing the close, so that
-- an instance of the previous version, which does not know the column, can still close sessions during a rolling
-- upgrade. The WHEN clause keeps it off every other write.
CREATE FUNCTION fbs_erase_granular_scopes() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.granular_scopes := '[]'::jsonb;
    RETURN NEW;
END
$$;
CREATE TRIGGER sessions_erase_granular_scopes BEFORE INSERT OR UPDATE ON sessions
    FOR EACH ROW WHEN (NEW.state = 'closed' AND NEW.granular_scopes <> '[]'::jsonb)
    EXECUTE FUNCTION fbs_erase_granular_scopes();

-- Digits only, as Facebook's object ids are; never together with scopes.
ALTER TABLE login_states ADD COLUMN config_id text
    CHECK (config_id IS NULL OR (config_id ~ '^[0-9]{1,32}$' AND cardinality(scopes) = 0));
