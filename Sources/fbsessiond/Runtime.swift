import FBSessionsCore
import FBSessionsStorage
import Foundation
import Postgres
import Support

/// What every command that touches the database shares: settings, the pool, the stores, the migrator.
///
/// Connections name themselves in `application_name` (see `pg_stat_activity`): the pool of `serve` and `run` is
/// `fbsessiond`, the event listener `fbsessiond-listener`, migrations `fbsessiond-migrate`, and the pool of
/// another command `fbsessiond-<command>` (`fbsessiond-key`, `fbsessiond-sweep`, …). The pool goes through
/// `DATABASE_URL` (a pooler, perhaps); the listener and migrations, which need a server session of their own,
/// through `FBS_DIRECT_DATABASE_URL` (docs/scale-out.md).
struct Runtime {
    let settings: Settings
    let database: Database
    let migrator: Migrator
    let logger: Logger
    /// The connection past any pooler: `FBS_DIRECT_DATABASE_URL`, else the pool's URL.
    let directDatabaseURL: String

    /// Reads and checks settings; `needsKeyring` for commands that encrypt or decrypt.
    static func settings(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> Settings {
        switch Settings.parse(environment) {
        case .success(let settings): return settings
        case .failure(let error): throw CommandFailure("invalid settings:\n  " + error.problems.joined(separator: "\n  "))
        }
    }

    /// Settings for an admin command (`migrate`, `app`, `key`, `webhook`, `sweep`, `reencrypt`): as
    /// ``settings(_:)``, but without `DATABASE_URL` the stack of a running `fbsessiond run` in `./.fbsessions`
    /// is used (``LocalStack``).
    static func adminSettings(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> Settings {
        try settings(try LocalStack.environment(environment))
    }

    /// Creates the pool (connections open on first use) and loads the migrations.
    ///
    /// - Parameters:
    ///   - settings: The settings.
    ///   - databaseURL: The pool's URL when not `DATABASE_URL` (`run`'s private cluster, which is also the direct
    ///     URL then).
    ///   - applicationName: The pool's `application_name`: `fbsessiond` for the service, `fbsessiond-<command>`
    ///     for other commands.
    init(settings: Settings, databaseURL: String? = nil, applicationName: String = "fbsessiond") throws {
        guard let url = databaseURL ?? settings.databaseURL else {
            throw CommandFailure("DATABASE_URL is not set (or use `fbsessiond run` for a private local database)")
        }
        self.settings = settings
        // FBS_DIRECT_DATABASE_URL goes with DATABASE_URL; `run`'s private cluster is its own direct URL.
        let usesSettings = databaseURL == nil || databaseURL == settings.databaseURL
        self.directDatabaseURL = (usesSettings ? settings.directDatabaseURL : nil) ?? url
        let logger = Logger(label: "fbsessiond", level: settings.logLevel)
        self.logger = logger
        var configuration = PostgresPool.Configuration(connectionString: url)
        configuration.size = settings.databasePoolSize
        configuration.maxWaiters = settings.databaseMaxWaiters
        configuration.acquireTimeout = .milliseconds(Int(settings.databaseAcquireTimeout * 1000))
        configuration.statementTimeout = .milliseconds(Int(settings.statementTimeout * 1000))
        // A new connection waits no longer than a statement may (libpq's floor is 2 s), unless the URL says.
        if let callTimeout = configuration.connectionOptions.callTimeout {
            configuration.connectTimeout = min(configuration.connectTimeout, callTimeout)
        }
        configuration.applicationName = applicationName
        configuration.preparedStatements = Self.preparedStatements(settings)
        configuration.onTransactionPoolerDetected = { evidence in
            logger.warning(
                "a pooler in transaction mode shares server sessions; statements are no longer prepared",
                ["evidence": .string(evidence), "setting": .string("FBS_DB_PREPARED_STATEMENTS=false")])
        }
        self.database = Database(pool: PostgresPool(configuration: configuration))
        guard let directory = Migration.locateDirectory() else {
            throw CommandFailure("no migrations folder found; set FBS_MIGRATIONS_DIR")
        }
        self.migrator = Migrator(migrations: try Migration.load(from: directory))
    }

    /// `FBS_DB_PREPARED_STATEMENTS`: true and false are explicit; unset is automatic.
    static func preparedStatements(_ settings: Settings) -> PostgresPreparedStatements {
        switch settings.databasePreparedStatements {
        case true?: .always
        case false?: .never
        case nil: .automatic
        }
    }

    func keyring() throws -> Keyring {
        guard let keyring = settings.keyring else {
            throw CommandFailure("FBS_ENCRYPTION_KEYS is not set (kid:base64-of-32-bytes; e.g. k1:$(openssl rand -base64 32))")
        }
        return keyring
    }

    var apps: PostgresAppStore {
        get throws { PostgresAppStore(database: database, keyring: try keyring()) }
    }

    var keys: PostgresKeyStore { PostgresKeyStore(database: database) }

    /// The audit log, where admin commands record what they did (``AuditTrail``).
    var audit: PostgresAuditLog { PostgresAuditLog(database: database) }

    /// Applies pending migrations over the direct URL (their advisory lock is held by one server session from
    /// start to end, which a transaction-mode pooler would not keep); returns those applied.
    func migrate() async throws -> [Migration] {
        let migrator = self.migrator
        return try await withDirectConnection(named: "fbsessiond-migrate") { connection in
            try migrator.migrate(on: connection)
        }
    }

    /// Runs `body` on a new connection to ``directDatabaseURL``, on a thread of its own (the connection blocks),
    /// and closes the connection afterwards.
    ///
    /// - Parameters:
    ///   - applicationName: The connection's `application_name`, `fbsessiond-…`.
    ///   - body: The work.
    /// - Returns: What `body` returns.
    /// - Throws: ``ServiceError/databaseUnavailable`` when the database cannot be reached or fails; else what
    ///   `body` throws.
    func withDirectConnection<T: Sendable>(
        named applicationName: String, _ body: @escaping @Sendable (PostgresConnection) throws -> T
    ) async throws -> T {
        let url = directDatabaseURL
        let options = PostgresConnection.Options(
            statementTimeout: .milliseconds(Int(settings.statementTimeout * 1000)), applicationName: applicationName)
        let result: Result<T, any Error> = await withCheckedContinuation { continuation in
            Thread {
                continuation.resume(
                    returning: Result {
                        let connection = try PostgresConnection(connectionString: url, options: options)
                        defer { connection.close() }
                        return try body(connection)
                    })
            }.start()
        }
        do {
            return try result.get()
        } catch let error as PostgresError where error.isUnavailable {
            throw ServiceError.databaseUnavailable
        }
    }

    func shutdown() {
        database.pool.shutdown()
    }
}

/// A command that failed for a reason the operator can act on; printed as `fbsessiond: <message>`, exit 1.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
