import FBSessionsCore
import Foundation
import Postgres
import TestSupport
import Testing

@testable import fbsessiond

/// How `Runtime` turns the database settings into a pool and a direct connection.
@Suite("Runtime's database settings", .serialized)
struct RuntimeDatabaseTests {
    private func runtime(_ environment: [String: String], applicationName: String = "fbsessiond") throws -> Runtime {
        try Runtime(settings: try Runtime.settings(environment), applicationName: applicationName)
    }

    @Test func theSettingsReachThePool() throws {
        let pooled = try runtime([
            "DATABASE_URL": "postgresql://pooler:6432/db", "FBS_DIRECT_DATABASE_URL": "postgresql://primary:5432/db",
            "FBS_DB_PREPARED_STATEMENTS": "false", "FBS_STATEMENT_TIMEOUT": "1",
        ])
        defer { pooled.shutdown() }
        let configuration = pooled.database.pool.configuration
        #expect(pooled.directDatabaseURL == "postgresql://primary:5432/db")
        #expect(configuration.connectionString == "postgresql://pooler:6432/db")
        #expect(configuration.preparedStatements == .never && configuration.applicationName == "fbsessiond")
        #expect(configuration.connectionOptions.callTimeout == .milliseconds(1500))
        #expect(configuration.connectTimeout == .milliseconds(1500), "never longer than a statement may take")
        let plain = try runtime(["DATABASE_URL": "postgresql://primary:5432/db"], applicationName: "fbsessiond-key")
        defer { plain.shutdown() }
        #expect(plain.directDatabaseURL == "postgresql://primary:5432/db")
        #expect(plain.database.pool.configuration.preparedStatements == .automatic)
        #expect(plain.database.pool.configuration.applicationName == "fbsessiond-key")
        #expect(plain.database.pool.configuration.connectTimeout == .seconds(5))
        let forced = try runtime(["DATABASE_URL": "postgresql://p/db", "FBS_DB_PREPARED_STATEMENTS": "true"])
        defer { forced.shutdown() }
        #expect(forced.database.pool.configuration.preparedStatements == .always)
    }

    /// Migrations go over the direct URL, under their own name: the pool's URL here leads nowhere.
    @Test(.enabled(if: TestDatabase.isEnabled)) func migrationsUseTheDirectURL() async throws {
        let direct = try TestDatabase.create()
        defer { TestDatabase.drop(direct) }
        let runtime = try runtime([
            "DATABASE_URL": "postgresql://postgres@127.0.0.1:1/nowhere?connect_timeout=2",
            "FBS_DIRECT_DATABASE_URL": direct,
        ])
        defer { runtime.shutdown() }
        #expect(try await runtime.migrate().isEmpty, "the template is migrated already")
        let name = try await runtime.withDirectConnection(named: "fbsessiond-migrate") { connection in
            try connection.query("SELECT current_setting('application_name') AS name").first?.decode(
                "name", as: String.self)
        }
        #expect(name == "fbsessiond-migrate")
        await #expect(throws: ServiceError.databaseUnavailable) {
            _ = try await runtime.database.run { connection in try connection.query("SELECT 1") }
        }
    }
}
