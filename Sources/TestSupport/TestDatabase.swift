import FBSessionsStorage
import Foundation
import Postgres
import Support

/// Fresh databases for integration tests, each a copy of one migrated template.
///
/// Tests that need PostgreSQL are gated on `TEST_DATABASE_URL` (a server where the test user may create
/// databases). When `CI=true` a missing URL fails those tests instead of skipping them, so CI cannot pass by
/// testing nothing.
public enum TestDatabase {
    /// The server URL from `TEST_DATABASE_URL`.
    public static var serverURL: String? {
        let value = ProcessInfo.processInfo.environment["TEST_DATABASE_URL"] ?? ""
        return value.isEmpty ? nil : value
    }

    /// Whether database tests run: a URL is given, or CI demands it (and the test then fails on the missing URL).
    public static var isEnabled: Bool {
        serverURL != nil || ProcessInfo.processInfo.environment["CI"] == "true"
    }

    /// The URL of the server, or an error saying how to get one.
    public static func requireServerURL() throws -> String {
        guard let url = serverURL else {
            throw TestSetupError("TEST_DATABASE_URL is not set: run the tests with scripts/test, which starts a database")
        }
        return url
    }

    /// A new, empty-but-migrated database; returns its URL. Dropped by ``drop(_:)``.
    public static func create() throws -> String {
        let server = try requireServerURL()
        return try templateName.withLock { templateName in
            let template = try migratedTemplate(server: server, made: &templateName)
            let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
            let admin = try PostgresConnection(connectionString: server)
            defer { admin.close() }
            _ = try admin.simpleQuery(unsafeSQL: "CREATE DATABASE \(name) TEMPLATE \(template)")
            return url(server, database: String(name))
        }
    }

    /// A new database with no tables at all (for migration tests).
    public static func createEmpty() throws -> String {
        let server = try requireServerURL()
        let name = "e_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        let admin = try PostgresConnection(connectionString: server)
        defer { admin.close() }
        _ = try admin.simpleQuery(unsafeSQL: "CREATE DATABASE \(name)")
        return url(server, database: String(name))
    }

    /// Drops a database made here, ending its connections first. When the secrets transcript is on, its rows are
    /// kept first (``SecretsTranscript``).
    public static func drop(_ databaseURL: String) {
        guard let server = serverURL, let name = databaseURL.split(separator: "/").last?.split(separator: "?").first,
            name.hasPrefix("t_") || name.hasPrefix("e_"),
            let admin = try? PostgresConnection(connectionString: server)
        else { return }
        defer { admin.close() }
        SecretsTranscript.dumpDatabase(databaseURL)
        _ = try? admin.simpleQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
    }

    /// The migrations of this checkout.
    public static func migrations() throws -> [Migration] {
        guard let directory = Migration.locateDirectory() else { throw TestSetupError("no migrations folder found") }
        return try Migration.load(from: directory)
    }

    /// The template database's name once made. Its lock is held while a database is made from it, so that the
    /// template is made once and each copy sees it whole.
    private static let templateName = Locked<String?>(nil)

    /// Makes (once per process and per migration set) a template database with every migration applied.
    ///
    /// - Parameter made: The template's name when it was made already; set to it here otherwise.
    private static func migratedTemplate(server: String, made: inout String?) throws -> String {
        if let made { return made }
        let migrations = try migrations()
        let digest = migrations.map(\.checksum).joined().utf8.reduce(UInt64(14_695_981_039_346_656_037)) {
            ($0 ^ UInt64($1)) &* 1_099_511_628_211
        }
        let name = "fbs_template_" + String(digest, radix: 16)
        let admin = try PostgresConnection(connectionString: server)
        defer { admin.close() }
        let exists = try admin.query("SELECT 1 FROM pg_database WHERE datname = \(name)").count > 0
        if !exists {
            let building = name + "_build"
            _ = try admin.simpleQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(building) WITH (FORCE)")
            _ = try admin.simpleQuery(unsafeSQL: "CREATE DATABASE \(building)")
            let connection = try PostgresConnection(connectionString: url(server, database: building))
            _ = try Migrator(migrations: migrations).migrate(on: connection)
            connection.close()
            _ = try admin.simpleQuery(unsafeSQL: "ALTER DATABASE \(building) RENAME TO \(name)")
        }
        made = name
        return name
    }

    /// `server` (a `postgresql://` URI) with its database name replaced.
    public static func url(_ server: String, database: String) -> String {
        guard var components = URLComponents(string: server) else { return server }
        components.path = "/" + database
        return components.string ?? server
    }
}

/// A test environment problem (not a product failure).
public struct TestSetupError: Error, CustomStringConvertible {
    /// What is missing.
    public let description: String
    /// Creates an error.
    public init(_ description: String) { self.description = description }
}
