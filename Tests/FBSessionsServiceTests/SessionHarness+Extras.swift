import FBSessionsAPI
import FBSessionsCore
import FBSessionsGraph
import FBSessionsService
import FBSessionsStorage
import Foundation
import HTTPClient
import HTTPServer
import Postgres
import Support
import TestSupport

/// A second service instance on the harness's database and emulator: its own pool, key cache, exact cache and
/// listener, Graph client and single-flight maps, as another process would have.
final class SecondInstance: Sendable {
    let server: Server
    let pool: PostgresPool
    let harness: SessionHarness
    let service: ServiceAssembly
    let testCache: TestCache

    var store: PostgresSessionStore { service.store }

    init(
        _ harness: SessionHarness, keyCacheTTL: Double = 0, validateTTL: Int = 1,
        cacheBytes: Int = TestCache.configuredBytes
    ) async throws {
        self.harness = harness
        pool = PostgresPool(configuration: .init(connectionString: harness.databaseURL, size: 6))
        testCache = TestCache(databaseURL: harness.databaseURL, bytes: cacheBytes)
        let parts = try harness.parts(
            ["FBS_KEY_CACHE_TTL": String(keyCacheTTL), "FBS_VALIDATE_TTL": String(validateTTL)], cache: testCache)
        service = try ServiceAssembly(
            parts, database: .test(pool: pool, url: harness.databaseURL, keyring: harness.keyring))
        server = try service.server(SecretsTranscript.recording)
    }

    func call(
        _ method: String, _ path: String, json: Any? = nil, key: String? = nil, headers extra: [(String, String)] = []
    ) async throws -> SessionHarness.Reply {
        var headers = [("Authorization", "Bearer \(key ?? harness.key)")] + extra
        var body: [UInt8]?
        if let json {
            body = Array(try JSONSerialization.data(withJSONObject: json))
            headers.append(("Content-Type", "application/json"))
        }
        let response = try await harness.client.execute(
            ClientRequest(method: method, url: "http://127.0.0.1:\(server.port)\(path)", headers: headers, body: body))
        return SessionHarness.Reply(status: response.status, headers: response.headers, body: response.body)
    }

    func stop() {
        server.shutdown(gracePeriod: 0)
        service.shutdown()
        testCache.stop()
        pool.shutdown()
    }
}

/// Another tenant in the harness's database.
enum PostgresAppStoreFactory {
    static func otherAppKey(_ harness: SessionHarness) async throws -> String {
        let database = Database(pool: harness.pool)
        let app = try await PostgresAppStore(database: database, keyring: harness.keyring).addApp(
            AppDraft(
                name: "other", facebookAppID: "999000111",
                secret: SecretsTranscript.noted("app secret", "other-secret"), redirectURIs: [],
                requiredPermissions: []))
        let made = try await PostgresKeyStore(database: database).addKey(appID: app.id, scopes: Scope.allCases)
        return SecretsTranscript.noted("api key", made.text)
    }
}

/// `pg_dump` of a test database, as text.
enum PGDump {
    static func run(_ url: String) throws -> String {
        let bin = ProcessInfo.processInfo.environment["PG_BIN"].map { $0 + "/pg_dump" }
            ?? "/usr/lib/postgresql/15/bin/pg_dump"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: bin)
        process.arguments = ["--no-owner", url]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw TestSetupError("pg_dump failed") }
        return String(decoding: data, as: UTF8.self)
    }
}
