-- Loads :n generated sessions for bench/run, in the shape fbsessiond writes them, copied from one real session
-- (:'template', made by a real login through the service and the Graph emulator).
--
--   psql -v n=100000 -v template=ses_... -f bench/load.sql
--
-- Ids are ses_bench000000000001 ... (ses_ and base64url characters, as the service checks), the ones
-- bench/get.lua draws at random. Four sessions per owner (`bench-o<k>`, slots 0-3), each for its own Facebook
-- user, so the live-slot and live-user unique indexes hold; slot 0 is the owner's active session.
--
-- The token columns hold copies of the template's sealed token. It was sealed with the template's session id as
-- associated data, so it would NOT open for these ids: that is fine for status within the TTL, which never
-- decrypts (SessionService.status reads SessionRow.columns, which leave the token out). bench/run checks that a
-- generated session answers 200, open and cached, with no Graph call. Rows that would need the token (a
-- validation after the TTL, /token, logout with revoke) are only ever asked of real sessions.
-- validated_at and token_refreshed_at are now(), so every generated session is within the TTL and not due for
-- re-extension during the run.

\set ON_ERROR_STOP on
BEGIN;

INSERT INTO sessions (
    id, app_id, owner, slot, facebook_user_id, state, closed_reason, closed_at, action_required,
    token_key_id, token_box, token_expires_at, data_access_expires_at, token_refreshed_at,
    permissions, declined_permissions, expired_permissions, profile, profile_refreshed_at,
    validated_at, validating_until, created_at, updated_at)
SELECT
    'ses_bench' || lpad(i::text, 12, '0'),
    t.app_id,
    'bench-o' || ((i - 1) / 4),
    (i - 1) % 4,
    (2000000000000000 + i)::text,
    'open', NULL, NULL, t.action_required,
    t.token_key_id, t.token_box, t.token_expires_at, t.data_access_expires_at, now(),
    t.permissions, t.declined_permissions, t.expired_permissions,
    jsonb_set(jsonb_set(t.profile, '{id}', to_jsonb((2000000000000000 + i)::text)),
              '{name}', to_jsonb('Bench User ' || i)),
    now(), now(), NULL, now(), now()
FROM sessions t, generate_series(1, :n) AS i
WHERE t.id = :'template';

INSERT INTO owners (app_id, owner, active_session_id)
SELECT t.app_id, 'bench-o' || k, 'ses_bench' || lpad((k * 4 + 1)::text, 12, '0')
FROM sessions t, generate_series(0, (:n - 1) / 4) AS k
WHERE t.id = :'template';

COMMIT;

VACUUM (ANALYZE) sessions;
VACUUM (ANALYZE) owners;
SELECT count(*) AS sessions FROM sessions;
