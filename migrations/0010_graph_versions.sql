-- Purpose: each app's own Graph API version, and the version Facebook's latest answer to the app named.

-- The version every Graph call and login dialog of the app uses (`fbsessiond app add|update --graph-version`);
-- null uses FBS_GRAPH_VERSION. The commands check it against Meta's versions table; the database only its shape.
ALTER TABLE apps ADD COLUMN graph_version text CHECK (graph_version ~ '^v[0-9]{1,4}\.[0-9]{1,4}$');

-- The `facebook-api-version` header of the latest answer any instance recorded for the app (instances record at
-- most one a minute per app, and at once when the served version changes), the version that call asked for, and
-- when it came. GET /v1/app shows `served` only while the app still asks for graph_served_for.
ALTER TABLE apps ADD COLUMN graph_served text;
ALTER TABLE apps ADD COLUMN graph_served_for text;
ALTER TABLE apps ADD COLUMN graph_served_at timestamptz;
