import FBSessionsAPI
import FBSessionsCore
import FBSessionsGraph
import FBSessionsStorage
import Foundation
import GraphEmulator
import HTTPClient
import HTTPServer
import Postgres
import Support
import TestSupport

/// The service end to end for session tests: the Graph emulator over real HTTP, a fresh real database, the
/// service on a real socket, a Facebook app registered on both sides, and keys for it.
final class SessionHarness: Sendable {
    let emulator: Emulator
    let emulatorServer: Server
    let databaseURL: String
    let pool: PostgresPool
    let graph: GraphClient
    let server: Server
    let client: Client
    let facebookApp: EmulatedApp
    let app: App
    /// A key with every scope.
    let key: String
    /// A key with only `sessions`.
    let sessionsKey: String
    let store: PostgresSessionStore
    let keyring: Keyring
    /// The key ring in settings form.
    let keyringText: String
    let sessions: SessionService
    /// The API key store the router uses (a ``CachedKeyStore`` when `keyCacheTTL` > 0).
    let keys: any KeyStore
    let validateTTL: Double
    /// The exact cache and its listener (``TestCache``: as `FBS_CACHE_BYTES` says).
    let testCache: TestCache

    init(
        maxSlots: Int = 8, validateTTL: Double = 300, requiredPermissions: [String] = [], keyCacheTTL: Double = 0
    ) async throws {
        self.validateTTL = validateTTL
        emulator = Emulator()
        emulatorServer = try emulator.start()
        databaseURL = try TestDatabase.create()
        pool = PostgresPool(configuration: .init(connectionString: databaseURL, size: 6, connectTimeout: .seconds(2)))
        let database = Database(pool: pool)
        testCache = TestCache(databaseURL: databaseURL)
        (keyring, keyringText) = SecretsTranscript.notingKeyring(Keyring.generate())
        facebookApp = try emulator.registerApp(redirectURIs: ["https://shop.example/callback"])
        let apps = PostgresAppStore(database: database, keyring: keyring)
        app = try await apps.addApp(
            AppDraft(
                name: "shop", facebookAppID: facebookApp.id, secret: facebookApp.secret,
                redirectURIs: ["https://shop.example/callback"], requiredPermissions: requiredPermissions))
        let stored = PostgresKeyStore(database: database, cache: testCache.cache)
        key = SecretsTranscript.noted("api key", try await stored.addKey(appID: app.id, scopes: Scope.allCases).text)
        sessionsKey = SecretsTranscript.noted(
            "api key", try await stored.addKey(appID: app.id, scopes: [.sessions]).text)
        let keys: any KeyStore = keyCacheTTL > 0 ? CachedKeyStore(stored, ttl: keyCacheTTL) : stored
        self.keys = keys
        graph = try GraphClient(
            configuration: .init(
                baseURL: "http://127.0.0.1:\(emulatorServer.port)", timeout: .seconds(3),
                retry: .init(maxAttempts: 2, baseDelay: .milliseconds(20)), allowsPlainHTTP: true),
            logger: SecretsTranscript.logger("fbsessiond.graph"))
        store = PostgresSessionStore(database: database, keyring: keyring, cache: testCache.cache)
        sessions = SessionService(
            store: store, graph: graph, apps: apps,
            policy: .init(
                validateTTL: validateTTL, refreshAfter: 86_400, maxSlots: maxSlots, graphVersion: nil, graphTimeout: 3))
        let metrics = MetricsRegistry()
        let services = Services(
            apps: apps, keys: keys,
            readiness: PostgresReadiness(database: database, migrator: Migrator(migrations: try TestDatabase.migrations())),
            metrics: metrics, openAPIDocument: [], sessions: sessions, maxSlots: maxSlots)
        let router = Router(
            routes: APIRoutes.all(services), keys: keys,
            observer: Observer(metrics: metrics, logger: SecretsTranscript.logger("http", level: .error)))
        var configuration = ServerConfiguration()
        configuration.port = 0
        server = try Server(configuration: configuration, handler: SecretsTranscript.recording(router))
        client = try Client(configuration: .init(timeout: .seconds(20)))
    }

    /// A new emulated user and a token for this app.
    func userToken(
        name: String = "Ada Lovelace", email: String? = "ada@example.com", longLived: Bool = false,
        granted: [String] = ["public_profile", "email"], declined: [String] = []
    ) throws -> (user: EmulatedUser, token: String) {
        let parts = name.split(separator: " ")
        let user = try emulator.createUser(
            firstName: parts.first.map(String.init), lastName: parts.count > 1 ? String(parts[1]) : nil, name: name,
            email: email)
        let token = try emulator.issueToken(
            appID: facebookApp.id, userID: user.id, longLived: longLived, granted: granted, declined: declined)
        return (user, token.accessToken)
    }

    struct Reply {
        let status: Int
        let headers: [(String, String)]
        let body: [UInt8]
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]) ?? [:] }
        var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
        var text: String { String(decoding: body, as: UTF8.self) }
        func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
    }

    func call(_ method: String, _ path: String, json: Any? = nil, rawBody: String? = nil, key: String? = nil) async throws
        -> Reply
    {
        var headers = [("Authorization", "Bearer \(key ?? self.key)")]
        var body: [UInt8]?
        if let json {
            body = Array(try JSONSerialization.data(withJSONObject: json))
        } else if let rawBody {
            body = Array(rawBody.utf8)
        }
        if body != nil { headers.append(("Content-Type", "application/json")) }
        let response = try await client.execute(
            ClientRequest(method: method, url: "http://127.0.0.1:\(server.port)\(path)", headers: headers, body: body))
        return Reply(status: response.status, headers: response.headers, body: response.body)
    }

    func login(owner: String, token: String, slot: Int? = nil, activate: Bool? = nil) async throws -> Reply {
        var body: [String: Any] = ["owner": owner, "access_token": token]
        if let slot { body["slot"] = slot }
        if let activate { body["activate"] = activate }
        return try await call("POST", "/v1/sessions", json: body)
    }

    /// Rows of a query on the test database (blocking; small).
    func rows(_ query: PostgresQuery) async throws -> PostgresRows {
        try await pool.query(query)
    }

    func stop() {
        server.shutdown(gracePeriod: 0)
        emulatorServer.shutdown(gracePeriod: 0)
        client.shutdown()
        graph.shutdown()
        testCache.stop()
        pool.shutdown()
        TestDatabase.drop(databaseURL)
    }
}
