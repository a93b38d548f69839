-- Purpose: the shared profile-picture cache: bytes and Graph's description per app, Facebook user and size, with the lease that lets one instance fill a key while the others wait.

CREATE TABLE picture_cache (
    app_id           text NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    facebook_user_id text NOT NULL,
    -- `default`, `type=large`, `w=100,h=100`, ...: the size asked of Graph.
    size_key         text NOT NULL,
    -- The picture; all NULL while a first fill is in progress (the row then only holds the lease).
    content_type     text,
    body             bytea,
    -- Strong ETag of the bytes, quoted.
    etag             text,
    -- The CDN URL Graph gave, its size and silhouette flag, and the URL's own expiry (`ext` or `oe`).
    url              text,
    width            integer,
    height           integer,
    is_silhouette    boolean,
    url_expires_at   timestamptz,
    fetched_at       timestamptz,
    -- Served without asking Graph until then; after it, only when Graph or the CDN fails (stale).
    fresh_until      timestamptz,
    -- The fill lease: whoever holds `fill_token` fetches; others wait until the row changes or the lease ends.
    fill_token       text,
    filling_until    timestamptz,
    PRIMARY KEY (app_id, facebook_user_id, size_key),
    CHECK (
        (body IS NULL) = (content_type IS NULL) AND (body IS NULL) = (etag IS NULL)
        AND (body IS NULL) = (url IS NULL) AND (body IS NULL) = (fetched_at IS NULL)
        AND (body IS NULL) = (fresh_until IS NULL) AND (body IS NULL) = (is_silhouette IS NULL)
    ),
    CHECK ((fill_token IS NULL) = (filling_until IS NULL)),
    CHECK (body IS NOT NULL OR fill_token IS NOT NULL)
);

-- The primary key's prefix (app_id, facebook_user_id) serves erasure: logout, deauthorization, data deletion.
