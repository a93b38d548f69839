import FBSessionsCore
import Foundation
import FBSessionsService
import FBSessionsStorage
import Postgres
import Support

extension ServiceParts {
    /// The parts a test harness builds its service from: the settings `environment` describes over those tests run
    /// with (a free loopback port, Graph calls bounded at 3 s and tried twice, pictures from loopback over http, no
    /// key cache, no sweep, `FBS_CACHE_BYTES` as the suite runs), with every log through ``SecretsTranscript``.
    ///
    /// - Parameter environment: Settings as `fbsessiond serve` reads them (`FBS_GRAPH_URL`, `FBS_MAX_SLOTS`, …).
    /// - Throws: ``TestSetupError`` for a setting `fbsessiond` would refuse.
    public static func test(_ environment: [String: String] = [:]) throws -> ServiceParts {
        var defaults = [
            "FBS_LISTEN": "127.0.0.1:0", "FBS_GRAPH_TIMEOUT": "3", "FBS_PICTURE_HOSTS": "127.0.0.1",
            "FBS_PICTURE_ALLOW_HTTP": "true", "FBS_KEY_CACHE_TTL": "0", "FBS_SWEEP_INTERVAL": "0",
            "FBS_CACHE_BYTES": String(TestCache.configuredBytes), "FBS_LOG_LEVEL": "error",
        ]
        // Trying a new Graph version before moving an app to it runs the tests with it (docs/graph-versions.md).
        if let version = ProcessInfo.processInfo.environment["FBS_GRAPH_VERSION"] {
            defaults["FBS_GRAPH_VERSION"] = version
        }
        let settings: Settings
        switch Settings.parse(defaults.merging(environment) { $1 }) {
        case .success(let parsed): settings = parsed
        case .failure(let error): throw TestSetupError("invalid test settings: \(error)")
        }
        var parts = ServiceParts(settings: settings, logger: { SecretsTranscript.logger($0, level: .error) })
        parts.graph.retry = .init(maxAttempts: 2, baseDelay: .milliseconds(20))
        return parts
    }
}

extension ServiceDatabase {
    /// A test database on `pool`, with the repository's migrations and its own URL for the listener.
    public static func test(pool: PostgresPool, url: String, keyring: Keyring) throws -> ServiceDatabase {
        ServiceDatabase(
            database: Database(pool: pool), keyring: keyring, migrator: Migrator(migrations: try TestDatabase.migrations()),
            listenerURL: url)
    }
}
