import FBSessionsCore
import FBSessionsStorage
import Foundation
import Postgres
import Support

/// What every command that touches the database shares: settings, the pool, the stores, the migrator.
struct Runtime {
    let settings: Settings
    let database: Database
    let migrator: Migrator
    let logger: Logger

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

    init(settings: Settings, databaseURL: String? = nil) throws {
        guard let url = databaseURL ?? settings.databaseURL else {
            throw CommandFailure("DATABASE_URL is not set (or use `fbsessiond run` for a private local database)")
        }
        self.settings = settings
        var configuration = PostgresPool.Configuration(connectionString: url)
        configuration.size = settings.databasePoolSize
        configuration.maxWaiters = settings.databaseMaxWaiters
        configuration.acquireTimeout = .milliseconds(Int(settings.databaseAcquireTimeout * 1000))
        configuration.statementTimeout = .milliseconds(Int(settings.statementTimeout * 1000))
        configuration.applicationName = "fbsessiond"
        self.database = Database(pool: PostgresPool(configuration: configuration))
        guard let directory = Migration.locateDirectory() else {
            throw CommandFailure("no migrations folder found; set FBS_MIGRATIONS_DIR")
        }
        self.migrator = Migrator(migrations: try Migration.load(from: directory))
        self.logger = Logger(label: "fbsessiond", level: settings.logLevel)
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

    /// Applies pending migrations; returns those applied.
    func migrate() async throws -> [Migration] {
        let migrator = self.migrator
        return try await database.run { connection in try migrator.migrate(on: connection) }
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
