import FBSessionsCore

/// The `--help` texts.
enum Help {
    static let main = """
        fbsessiond: server-side Facebook login sessions.

        Usage: fbsessiond <command> [options]

        Commands:
          run              one-command local start: a private PostgreSQL in ./.fbsessions, migrations,
                           a demo app and key, and the service
          serve            the service (needs DATABASE_URL and FBS_ENCRYPTION_KEYS)
          migrate [up|status]
                           apply pending migrations, or show each migration's state
          app add|update|list
                           manage apps (tenants) and each app's Graph API version
          key add|list|revoke
                           manage API keys
          webhook add|list|remove
                           manage webhooks: signed POSTs of each event to an app's URL
          graph-emulator   the built-in Graph API emulator alone, with a demo app and users
          sweep            one pass of the background sweep (serve runs it every FBS_SWEEP_INTERVAL s)
          reencrypt        move every token and app secret to the first key of FBS_ENCRYPTION_KEYS

        Without DATABASE_URL, migrate, app, key, webhook, sweep and reencrypt use the stack of a running
        `fbsessiond run` in ./.fbsessions. Every command takes --help. Settings come from the environment:

        """ + settings

    /// One line per setting: the whole name, padded to the longest one, then its meaning and default.
    static var settings: String {
        let width = (Settings.documented.map(\.name.count).max() ?? 0) + 2
        return Settings.documented.map { entry in
            let name = entry.name.padding(toLength: width, withPad: " ", startingAt: 0)
            let fallback = entry.defaultValue.isEmpty ? "" : " (default \(entry.defaultValue))"
            return "  \(name)\(entry.meaning)\(fallback)"
        }.joined(separator: "\n")
    }

    static let serve = """
        Usage: fbsessiond serve

        Serves the API on FBS_LISTEN. Needs DATABASE_URL and FBS_ENCRYPTION_KEYS; run `fbsessiond migrate` first
        (/readyz answers 503 until migrations are current). SIGTERM or SIGINT stops accepting, lets in-flight
        requests finish for FBS_SHUTDOWN_GRACE seconds, closes the pool and exits 0.
        """

    static let run = """
        Usage: fbsessiond run

        Starts everything locally: without DATABASE_URL, a private PostgreSQL cluster under ./.fbsessions/pg
        (made on first use, reused after; as the postgres user when run as root), migrations, a demo app, a demo
        API key (printed), and the service. Ctrl-C stops the service and the cluster. All data stays in
        ./.fbsessions.
        """

    static let migrate = """
        Usage: fbsessiond migrate [up|status]

        up (the default) applies pending migrations in order, each in one transaction, under an advisory lock.
        status lists each migration as applied, pending, changed (edited after it was applied) or unknown.
        Needs DATABASE_URL (see below). Migrations are read from FBS_MIGRATIONS_DIR, ./migrations, or the
        installed copy.

        """ + LocalStack.helpNote

    static let app = """
        Usage: fbsessiond app add --name N --facebook-app-id ID --facebook-app-secret-file F
                                  [--redirect-uri U]... [--required-permission P]... [--graph-version vNN.N]
               fbsessiond app update --app NAME --graph-version vNN.N|default
               fbsessiond app list

        add stores an app with its secret encrypted under FBS_ENCRYPTION_KEYS and prints its id and, on the last
        line, its name. The secret is read from a file so it never appears in a process list or shell history.

        --graph-version is the Graph API version of every Graph call and login dialog of the app; without it (or
        with `update ... default`) the app uses FBS_GRAPH_VERSION. A malformed version is refused; one near or
        past its last day on Meta's versions table, or newer than the table, is taken with a warning. update
        reaches running instances within FBS_KEY_CACHE_TTL seconds; GET /v1/app then shows what Facebook serves
        (docs/graph-versions.md: moving an app to a new version).

        """ + LocalStack.helpNote

    static let key = """
        Usage: fbsessiond key add --app NAME [--scope sessions|events|tokens:read|audit]... [--rate N]
               fbsessiond key list [--app NAME]
               fbsessiond key update KEY_ID --rate N|none
               fbsessiond key revoke KEY_ID

        add prints the new key alone on its last line; it is stored only as a SHA-256 hash and cannot be shown
        again. Without --scope a key gets sessions and events (never audit: GET /v1/audit). list never shows keys,
        only their ids. add, update and revoke, like app add|update, webhook add|remove and reencrypt, write an
        entry to the audit log with the OS user who ran them.

        --rate N limits the key to N requests per second (a whole number from 1 to 1000000), with bursts of
        2 x N; over it the API answers 429 rate_limited with Retry-After. Without --rate a key is unlimited;
        update --rate none removes a limit. The limit is PER INSTANCE: each running fbsessiond counts on its
        own, so across K instances the key may make K x N requests per second (divide N by K for a cluster-wide
        limit). Instances with an exact cache (FBS_CACHE_BYTES > 0) apply an update from their next request;
        others within FBS_KEY_CACHE_TTL.

        """ + LocalStack.helpNote

    static let sweep = """
        Usage: fbsessiond sweep

        One pass of the background sweep, then exit (for cron when FBS_SWEEP_INTERVAL=0): re-extends tokens
        that near expiry or were not extended for FBS_REFRESH_AFTER seconds, re-validates sessions not validated
        for FBS_SWEEP_MAX_AGE seconds, closes those Graph says are dead, writes session.expiring for deadlines
        within FBS_EXPIRY_WARNING seconds (once per deadline), and retries revocations owed to Facebook. At most FBS_SWEEP_RATE sessions per second; stops early when Graph is failing. Safe to run on
        several hosts at once (rows are claimed with FOR UPDATE SKIP LOCKED).

        """ + LocalStack.helpNote

    static let reencrypt = """
        Usage: fbsessiond reencrypt [--batch N]

        Re-seals every stored token, app secret and pending revocation whose key is not the first key of
        FBS_ENCRYPTION_KEYS, in batches of N (default 500), printing progress. Each batch commits on its own,
        so the command can be interrupted and run again: it continues with what is left. Once it reports 0
        left, the old key can be removed from FBS_ENCRYPTION_KEYS.

        """ + LocalStack.helpNote

    static let graphEmulator = """
        Usage: fbsessiond graph-emulator [--port P] [--host H] [--redirect-uri U]...

        Serves the Graph API emulator (Graph paths, the login dialog, a CDN for pictures, and a control API
        under /__emulator/) on H:P (default 127.0.0.1 and a free port), seeded with the demo app and the demo
        users Alice and Bob. Point the service at it with FBS_GRAPH_URL and FBS_DIALOG_URL. Nothing in the
        product depends on it; Facebook itself is never contacted.

        Like Facebook in strict mode, the login dialog redirects only to one of the app's valid OAuth redirect
        URIs. The demo app has http://127.0.0.1:3000/callback; each --redirect-uri adds one (exact match).
        """
}
