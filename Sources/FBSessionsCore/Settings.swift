import Foundation
import GraphVersions
import Support
import Tracing

/// Every setting of the service, read from the environment once at start (`FBS_…` and `DATABASE_URL`).
public struct Settings: Sendable {
    /// libpq connection string or URI; nil means `fbsessiond run` starts a private cluster.
    public var databaseURL: String?
    /// A connection past any pooler, for `LISTEN`, migrations and session-level locks; nil means `databaseURL`.
    public var directDatabaseURL: String?
    /// Whether statements are prepared by name: true or false when `FBS_DB_PREPARED_STATEMENTS` says so, nil
    /// (unset) for automatic: prepared until a transaction-mode pooler is found (docs/scale-out.md).
    public var databasePreparedStatements: Bool?
    /// Host to listen on.
    public var listenHost: String
    /// Port to listen on.
    public var listenPort: Int
    /// Graph API base URL, without version.
    public var graphURL: String
    /// Login dialog base URL.
    public var dialogURL: String
    /// Where Limited Login's signing keys (a JWKS) are fetched.
    public var limitedJWKSURL: String
    /// Limited Login's uninstall endpoint (revocation of limited sessions).
    public var limitedUninstallURL: String
    /// Graph API version for apps without one of their own, e.g. `v25.0`.
    public var graphVersion: String
    /// The key ring; nil when `FBS_ENCRYPTION_KEYS` is unset.
    public var keyring: Keyring?
    /// Allowed picture host suffixes.
    public var pictureHosts: [String]
    /// Also fetch plain-http picture URLs.
    public var pictureAllowHTTP: Bool
    /// Log level.
    public var logLevel: Logger.Level
    /// Seconds a validation stays fresh.
    public var validateTTL: Int
    /// Seconds before a token is re-extended.
    public var refreshAfter: Int
    /// Accounts per owner.
    public var maxSlots: Int
    /// The service's public base URL.
    public var publicURL: String
    /// Seconds per Graph call.
    public var graphTimeout: Double
    /// Largest picture fetched.
    public var pictureMaxBytes: Int
    /// Largest request body.
    public var maxBodyBytes: Int
    /// Database connections in the pool.
    public var databasePoolSize: Int
    /// Requests that may wait for a database connection before 503.
    public var databaseMaxWaiters: Int
    /// Seconds a request waits for a database connection before 503.
    public var databaseAcquireTimeout: Double
    /// Seconds a statement may run.
    public var statementTimeout: Double
    /// Most open client connections.
    public var maxConnections: Int
    /// Seconds an idle or silent client connection is kept.
    public var connectionTimeout: Int
    /// Seconds in-flight requests get to finish at shutdown.
    public var shutdownGrace: Double
    /// Seconds between background sweeps in `serve`; 0 turns the sweep off (run `fbsessiond sweep` instead).
    public var sweepInterval: Double
    /// Most sessions the sweep looks at per second.
    public var sweepRate: Double
    /// The sweep re-validates sessions not validated for this many seconds.
    public var sweepMaxAge: Double
    /// Seconds before `token.expires_at` or `token.data_access_expires_at` that a standard session gets its
    /// `session.expiring` event (once per deadline; 0: never). At most ``maxExpiryWarning``.
    public var expiryWarning: Int
    /// Seconds a key's app and scopes are remembered after a full lookup (0: never cached). Never how long a
    /// revoked key keeps working: every request confirms its key's liveness in the database (docs/caching.md).
    public var keyCacheTTL: Double
    /// The most bytes the exact cache of sessions, owners' lists and key liveness may take (0: no cache; every
    /// request reads the database). docs/caching.md, "Exact caches across instances".
    public var cacheBytes: Int
    /// Days the audit log keeps an entry before the sweep deletes it (`FBS_AUDIT_RETENTION`, 1 to 36,500).
    public var auditRetentionDays: Int = AuditPolicy.defaultRetentionDays
    /// Whether `GET /v1/sessions/{id}/token` writes a `token.read` entry. Always, but for the benchmark's baseline
    /// (`FBS_AUDIT_TOKEN_READS=off`, not for production: docs/benchmarks.md, "Token reads and the audit log").
    public var auditTokenReads = true
    /// OpenTelemetry tracing from the standard `OTEL_*` variables; nil when off (no endpoint set, or
    /// `OTEL_SDK_DISABLED=true`). docs/operations.md, "Traces".
    public var tracing: TracingConfiguration?
    /// Settings that are usable but that an operator should hear about (a Graph version near its sunset, or newer
    /// than Meta's table), one line each; `serve` and `run` log them at start.
    public var warnings: [String] = []

    /// The Graph API version used when `FBS_GRAPH_VERSION` is unset: one with more than a year left on Meta's
    /// table (``GraphVersionTable/defaultVersion``).
    public static let defaultGraphVersion = GraphVersionTable.defaultVersion.description
    /// `FBS_EXPIRY_WARNING` when unset: a week.
    public static let defaultExpiryWarning = 604_800
    /// The largest `FBS_EXPIRY_WARNING`: 90 days, the whole life of data access (a longer window would warn at
    /// every login).
    public static let maxExpiryWarning = 90 * 86_400
    /// Limited Login's key set (developers.facebook.com, "OIDC Token for Limited Login").
    public static let defaultLimitedJWKSURL = "https://limited.facebook.com/.well-known/oauth/openid/jwks/"
    /// Limited Login's uninstall endpoint (the same page).
    public static let defaultLimitedUninstallURL = "https://www.limited.facebook.com/platform/uninstall/"

    /// Every variable read, with its default, for `--help` and `deploy/fbsessiond.env.example`.
    public static let documented: [(name: String, defaultValue: String, meaning: String)] = [
        ("DATABASE_URL", "", "libpq connection string or URI (unset: `fbsessiond run` starts a private cluster)"),
        (
            "FBS_DIRECT_DATABASE_URL", "",
            "a connection past any pooler, for LISTEN, migrations and session locks (unset: DATABASE_URL)"
        ),
        (
            "FBS_DB_PREPARED_STATEMENTS", "",
            "false behind a transaction-mode pooler such as PgBouncer before 1.21 (unset: automatic)"
        ),
        ("FBS_LISTEN", "127.0.0.1:8080", "address:port to listen on"),
        ("FBS_GRAPH_URL", "https://graph.facebook.com", "Graph API base URL, no version"),
        ("FBS_DIALOG_URL", "https://www.facebook.com", "login dialog base URL"),
        ("FBS_LIMITED_JWKS_URL", defaultLimitedJWKSURL, "where Limited Login's signing keys are fetched"),
        ("FBS_LIMITED_UNINSTALL_URL", defaultLimitedUninstallURL, "Limited Login's revocation (uninstall) endpoint"),
        (
            "FBS_GRAPH_VERSION", defaultGraphVersion,
            "Graph API version of apps without their own (app add|update --graph-version); vMAJOR.MINOR"
        ),
        ("FBS_ENCRYPTION_KEYS", "", "key ring kid:base64-32-bytes,...; the first encrypts (required by serve)"),
        ("FBS_PICTURE_HOSTS", "fbcdn.net,fbsbx.com,facebook.com", "allowed picture host suffixes"),
        ("FBS_PICTURE_ALLOW_HTTP", "false", "also fetch plain-http picture URLs (loopback tests only)"),
        ("FBS_LOG_LEVEL", "info", "debug, info, warning or error"),
        ("FBS_VALIDATE_TTL", "300", "seconds a validation stays fresh"),
        ("FBS_REFRESH_AFTER", "86400", "seconds before a token is re-extended"),
        ("FBS_MAX_SLOTS", "8", "accounts per owner"),
        ("FBS_PUBLIC_URL", "http:// + FBS_LISTEN", "the service's public base URL"),
        ("FBS_GRAPH_TIMEOUT", "10", "seconds per Graph call"),
        ("FBS_PICTURE_MAX_BYTES", "5242880", "largest picture fetched"),
        ("FBS_MAX_BODY_BYTES", "1048576", "largest request body accepted (413 beyond)"),
        ("FBS_DB_POOL_SIZE", "10", "database connections"),
        ("FBS_DB_MAX_WAITERS", "1000", "requests that may queue for a connection (503 beyond)"),
        ("FBS_DB_ACQUIRE_TIMEOUT", "5", "seconds a request waits for a connection (then 503)"),
        ("FBS_STATEMENT_TIMEOUT", "10", "seconds a statement may run"),
        ("FBS_MAX_CONNECTIONS", "4096", "most open client connections"),
        ("FBS_CONNECTION_TIMEOUT", "30", "seconds an idle or silent client connection is kept"),
        ("FBS_SHUTDOWN_GRACE", "10", "seconds in-flight requests get to finish on SIGTERM"),
        ("FBS_SWEEP_INTERVAL", "60", "seconds between background sweeps in serve (0: off; use `fbsessiond sweep`)"),
        ("FBS_SWEEP_RATE", "20", "most sessions the sweep looks at per second"),
        ("FBS_SWEEP_MAX_AGE", "86400", "the sweep re-validates sessions not validated for this many seconds"),
        (
            "FBS_EXPIRY_WARNING", String(defaultExpiryWarning),
            "seconds before a token or its data access runs out that session.expiring is sent, once per deadline (0: never)"
        ),
        ("FBS_KEY_CACHE_TTL", "300", "seconds a key's app and scopes are remembered; revocation still applies at once (0: off)"),
        ("FBS_CACHE_BYTES", "33554432", "bytes for the exact cache of sessions, owners' lists and key liveness (0: off)"),
        ("FBS_AUDIT_RETENTION", "365", "days the audit log keeps an entry; the sweep deletes older ones (1 to 36500)"),
    ] + TracingConfiguration.documented

    /// Reads every setting; returns all problems at once instead of stopping at the first.
    public static func parse(_ environment: [String: String]) -> Result<Settings, SettingsError> {
        var reader = EnvironmentReader(environment)
        let listen = reader.string("FBS_LISTEN", default: "127.0.0.1:8080")
        var host = "127.0.0.1"
        var port = 8080
        if let colon = listen.lastIndex(of: ":"), let parsed = Int(listen[listen.index(after: colon)...]),
            (0...65535).contains(parsed), colon != listen.startIndex
        {
            host = String(listen[..<colon])
            port = parsed
        } else {
            reader.problem("FBS_LISTEN: expected address:port, e.g. 127.0.0.1:8080")
        }
        let graphURL = reader.string("FBS_GRAPH_URL", default: "https://graph.facebook.com")
        let dialogURL = reader.string("FBS_DIALOG_URL", default: "https://www.facebook.com")
        let jwksURL = reader.string("FBS_LIMITED_JWKS_URL", default: defaultLimitedJWKSURL)
        let uninstallURL = reader.string("FBS_LIMITED_UNINSTALL_URL", default: defaultLimitedUninstallURL)
        for (name, value) in [
            ("FBS_GRAPH_URL", graphURL), ("FBS_DIALOG_URL", dialogURL), ("FBS_LIMITED_JWKS_URL", jwksURL),
            ("FBS_LIMITED_UNINSTALL_URL", uninstallURL),
        ]
        where !(value.hasPrefix("https://") || value.hasPrefix("http://")) {
            reader.problem("\(name): expected an http(s) URL")
        }
        let version = reader.string("FBS_GRAPH_VERSION", default: defaultGraphVersion)
        var warnings: [String] = []
        switch GraphVersionTable.meta.check(version, as: "FBS_GRAPH_VERSION", on: CalendarDay(unixSeconds: Date().timeIntervalSince1970)) {
        case .accepted(_, let found): warnings = found
        case .refused(let line): reader.problem(line)
        }
        var keyring: Keyring?
        if let text = reader.optionalString("FBS_ENCRYPTION_KEYS") {
            do {
                keyring = try Keyring(parsing: text)
            } catch {
                reader.problem("FBS_ENCRYPTION_KEYS: \(error.description)")
            }
        }
        let hosts = reader.string("FBS_PICTURE_HOSTS", default: "fbcdn.net,fbsbx.com,facebook.com")
            .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
        if hosts.isEmpty { reader.problem("FBS_PICTURE_HOSTS: expected at least one host suffix") }
        let allowHTTP = reader.bool("FBS_PICTURE_ALLOW_HTTP", default: false)
        let levelName = reader.string("FBS_LOG_LEVEL", default: "info")
        let level = Logger.Level(name: levelName) ?? .info
        if Logger.Level(name: levelName) == nil {
            reader.problem("FBS_LOG_LEVEL: expected debug, info, warning or error")
        }
        var preparedStatements: Bool?
        if reader.optionalString("FBS_DB_PREPARED_STATEMENTS") != nil {
            preparedStatements = reader.bool("FBS_DB_PREPARED_STATEMENTS", default: true)
        }
        let databaseURL = reader.optionalString("DATABASE_URL")
        let directDatabaseURL = reader.optionalString("FBS_DIRECT_DATABASE_URL")
        if directDatabaseURL != nil, databaseURL == nil {
            reader.problem("FBS_DIRECT_DATABASE_URL: set DATABASE_URL too (the pool's connection)")
        }
        var settings = Settings(
            databaseURL: databaseURL, directDatabaseURL: directDatabaseURL,
            databasePreparedStatements: preparedStatements,
            listenHost: host, listenPort: port, graphURL: graphURL, dialogURL: dialogURL,
            limitedJWKSURL: jwksURL, limitedUninstallURL: uninstallURL, graphVersion: version,
            keyring: keyring, pictureHosts: hosts, pictureAllowHTTP: allowHTTP, logLevel: level,
            validateTTL: reader.integer("FBS_VALIDATE_TTL", default: 300, in: 1...86_400 * 30),
            refreshAfter: reader.integer("FBS_REFRESH_AFTER", default: 86_400, in: 60...86_400 * 60),
            maxSlots: reader.integer("FBS_MAX_SLOTS", default: 8, in: 1...64),
            publicURL: reader.string("FBS_PUBLIC_URL", default: "http://\(listen)"),
            graphTimeout: reader.seconds("FBS_GRAPH_TIMEOUT", default: 10, in: 0.1...120),
            pictureMaxBytes: reader.integer("FBS_PICTURE_MAX_BYTES", default: 5_242_880, in: 1024...(64 << 20)),
            maxBodyBytes: reader.integer("FBS_MAX_BODY_BYTES", default: 1 << 20, in: 1024...(64 << 20)),
            databasePoolSize: reader.integer("FBS_DB_POOL_SIZE", default: 10, in: 1...500),
            databaseMaxWaiters: reader.integer("FBS_DB_MAX_WAITERS", default: 1000, in: 0...100_000),
            databaseAcquireTimeout: reader.seconds("FBS_DB_ACQUIRE_TIMEOUT", default: 5, in: 0.01...300),
            statementTimeout: reader.seconds("FBS_STATEMENT_TIMEOUT", default: 10, in: 0.01...3600),
            maxConnections: reader.integer("FBS_MAX_CONNECTIONS", default: 4096, in: 16...1_000_000),
            connectionTimeout: reader.integer("FBS_CONNECTION_TIMEOUT", default: 30, in: 1...3600),
            shutdownGrace: reader.seconds("FBS_SHUTDOWN_GRACE", default: 10, in: 0...600),
            sweepInterval: reader.seconds("FBS_SWEEP_INTERVAL", default: 60, in: 0...86_400),
            sweepRate: reader.seconds("FBS_SWEEP_RATE", default: 20, in: 0.01...10_000),
            sweepMaxAge: reader.seconds("FBS_SWEEP_MAX_AGE", default: 86_400, in: 60...(86_400 * 60)),
            expiryWarning: reader.integer(
                "FBS_EXPIRY_WARNING", default: defaultExpiryWarning, in: 0...maxExpiryWarning),
            keyCacheTTL: reader.seconds("FBS_KEY_CACHE_TTL", default: 300, in: 0...86_400),
            cacheBytes: reader.integer("FBS_CACHE_BYTES", default: 32 << 20, in: 0...(64 << 30)))
        settings.auditRetentionDays = reader.integer(
            "FBS_AUDIT_RETENTION", default: AuditPolicy.defaultRetentionDays, in: AuditPolicy.retentionDays)
        // Not in `documented`: the benchmark's baseline only (docs/benchmarks.md), and loud when used.
        switch reader.optionalString("FBS_AUDIT_TOKEN_READS") {
        case nil, "on": break
        case "off":
            settings.auditTokenReads = false
            warnings.append(
                "FBS_AUDIT_TOKEN_READS=off: token reads are not written to the audit log (a benchmark's baseline only)")
        default: reader.problem("FBS_AUDIT_TOKEN_READS: expected on or off")
        }
        settings.tracing = TracingConfiguration.parse(&reader)
        if !reader.problems.isEmpty {
            return .failure(SettingsError(problems: reader.problems))
        }
        settings.warnings = warnings
        return .success(settings)
    }
}

/// Every invalid setting, one line each.
public struct SettingsError: Error, CustomStringConvertible, Sendable {
    /// One line per problem, naming the variable.
    public let problems: [String]
    /// All problems, one per line.
    public var description: String { problems.joined(separator: "\n") }
}
