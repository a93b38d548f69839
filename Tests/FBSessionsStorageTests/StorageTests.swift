import Crypto
import FBSessionsCore
import FBSessionsStorage
import Foundation
import Postgres
import Testing
import TestSupport

/// Migrations and the PostgreSQL stores against a real database.
@Suite(.enabled(if: TestDatabase.isEnabled)) struct StorageTests {
    static let keyring = SecretsTranscript.notingKeyring(Keyring.generate()).ring

    @Test func migrationsApplyOnceAndRecordChecksums() throws {
        let url = try TestDatabase.createEmpty()
        defer { TestDatabase.drop(url) }
        let migrations = try TestDatabase.migrations()
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        let migrator = Migrator(migrations: migrations)
        #expect(try migrator.status(on: connection).allSatisfy { $0.state == .pending })
        #expect(try migrator.migrate(on: connection).count == migrations.count)
        #expect(try migrator.migrate(on: connection).isEmpty)
        let recorded = try connection.query("SELECT version, checksum FROM schema_migrations ORDER BY version")
        #expect(try recorded.map { try $0.decode("checksum", as: String.self) } == migrations.map(\.checksum))
        #expect(try migrator.status(on: connection).allSatisfy { if case .applied = $0.state { true } else { false } })
        #expect(try connection.query("SELECT to_regclass('api_keys') IS NOT NULL AS t").first?.decode("t", as: Bool.self) == true)
    }

    @Test func anEditedMigrationIsRefused() throws {
        let url = try TestDatabase.createEmpty()
        defer { TestDatabase.drop(url) }
        let migrations = try TestDatabase.migrations()
        let connection = try PostgresConnection(connectionString: url)
        defer { connection.close() }
        _ = try Migrator(migrations: migrations).migrate(on: connection)
        var edited = migrations
        edited[0] = Migration(version: 1, name: migrations[0].name, sql: migrations[0].sql + "\n-- edited")
        let error = #expect(throws: MigrationError.self) { try Migrator(migrations: edited).migrate(on: connection) }
        #expect(error?.description.contains("was edited after it was applied") == true)
        #expect(try Migrator(migrations: edited).status(on: connection).first?.state == .changed)
    }

    @Test func migrationFilesMustBeNumberedWithoutGaps() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mig-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try "SELECT 1;".write(to: directory.appendingPathComponent("0001_first.sql"), atomically: true, encoding: .utf8)
        try "SELECT 2;".write(to: directory.appendingPathComponent("0003_third.sql"), atomically: true, encoding: .utf8)
        #expect(throws: MigrationError.self) { try Migration.load(from: directory) }
        try "SELECT 2;".write(to: directory.appendingPathComponent("0002_Bad-Name.sql"), atomically: true, encoding: .utf8)
        #expect(throws: MigrationError.self) { try Migration.load(from: directory) }
    }

    @Test func instancesMigratingAtOnceApplyEachMigrationOnce() async throws {
        let url = try TestDatabase.createEmpty()
        defer { TestDatabase.drop(url) }
        let migrations = try TestDatabase.migrations()
        let results = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    try await onThread {
                        let connection = try PostgresConnection(connectionString: url)
                        defer { connection.close() }
                        return try Migrator(migrations: migrations).migrate(on: connection).count
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.sorted() == [0, 0, 0, migrations.count])
    }

    @Test func appSecretsAreEncryptedAndBoundToTheirRow() async throws {
        let url = try TestDatabase.create()
        defer { TestDatabase.drop(url) }
        let pool = PostgresPool(configuration: .init(connectionString: url, size: 2))
        defer { pool.shutdown() }
        let store = PostgresAppStore(database: Database(pool: pool), keyring: Self.keyring)
        let app = try await store.addApp(
            AppDraft(
                name: "shop", facebookAppID: "123456",
                secret: SecretsTranscript.noted("app secret", "very-secret-app-secret"),
                redirectURIs: ["https://shop.example/cb"], requiredPermissions: ["email"]))
        #expect(try await store.app(named: "shop") == app)
        #expect(try await store.secret(ofApp: app.id) == "very-secret-app-secret")
        let raw = try await pool.query("SELECT secret_box, secret_key_id FROM apps WHERE id = \(app.id)")
        let box = try #require(raw.first).decode("secret_box", as: [UInt8].self)
        #expect(!String(decoding: box, as: UTF8.self).contains("very-secret"))
        #expect(try raw.first?.decode("secret_key_id", as: String.self) == Self.keyring.currentKeyID)

        await #expect(throws: ServiceError.appExists("shop")) {
            _ = try await store.addApp(AppDraft(name: "shop", facebookAppID: "999", secret: "x", redirectURIs: [], requiredPermissions: []))
        }
        // A ciphertext moved to another row does not open there.
        let other = try await store.addApp(AppDraft(name: "other", facebookAppID: "777", secret: "other", redirectURIs: [], requiredPermissions: []))
        _ = try await pool.execute("UPDATE apps SET secret_box = \(box) WHERE id = \(other.id)")
        await #expect(throws: ServiceError.undecryptable) { _ = try await store.secret(ofApp: other.id) }
    }

    @Test func keysAreHashedScopedAndRevocable() async throws {
        let url = try TestDatabase.create()
        defer { TestDatabase.drop(url) }
        let pool = PostgresPool(configuration: .init(connectionString: url, size: 2))
        defer { pool.shutdown() }
        let database = Database(pool: pool)
        let app = try await PostgresAppStore(database: database, keyring: Self.keyring).addApp(
            AppDraft(name: "a", facebookAppID: "1", secret: "s", redirectURIs: [], requiredPermissions: []))
        let keys = PostgresKeyStore(database: database)
        let made = try await keys.addKey(appID: app.id, scopes: [.sessions, .tokensRead])
        SecretsTranscript.noted("api key", made.text)
        let principal = try #require(try await keys.authenticate(made.text))
        #expect(principal.app.id == app.id && principal.allows(.tokensRead) && !principal.allows(.events))
        let stored = try await pool.query("SELECT key_hash FROM api_keys WHERE id = \(made.key.id)")
        #expect(try stored.first?.decode("key_hash", as: [UInt8].self) == SHA256.hash(made.text))
        let rows = try await pool.query("SELECT row_to_json(k)::text AS j FROM api_keys k")
        let secretPart = String(made.text.split(separator: "_", maxSplits: 2)[2])
        #expect(try rows.allSatisfy { !(try $0.decode("j", as: String.self)).contains(secretPart) })
        #expect(try await keys.authenticate(made.text + "x") == nil)
        #expect(try await keys.authenticate("fbs_\(made.key.id)_wrongsecret") == nil)
        #expect(try await keys.keys(appID: app.id).map(\.id) == [made.key.id])
        #expect(try await keys.revokeKey(id: made.key.id))
        #expect(try await keys.authenticate(made.text) == nil)
        #expect(try await keys.keys(appID: nil).first?.revokedAt != nil)
        #expect(try await keys.revokeKey(id: "k00000000000") == false)
    }
}
