import FBSessionsAPI
import FBSessionsCore
import FBSessionsGraph
import FBSessionsService
import FBSessionsStorage
import Foundation
import GraphEmulator
import HTTPClient
import HTTPServer
import Postgres
import Support
import TestSupport

/// The service end to end for session tests: the Graph emulator over real HTTP (as Limited Login's Facebook too),
/// a fresh real database, the service as `fbsessiond serve` wires it (``ServiceAssembly``) on a real socket, a
/// Facebook app registered on both sides, and keys for it.
final class SessionHarness: Sendable {
    static let publicURL = "https://sessions.example/"

    let emulator: Emulator
    let emulatorServer: Server
    let databaseURL: String
    let pool: PostgresPool
    /// The settings the service runs with, as `fbsessiond serve` reads them (a second instance starts from them).
    let environment: [String: String]
    let service: ServiceAssembly
    let server: Server
    let client: Client
    let facebookApp: EmulatedApp
    let app: App
    /// A key with every scope.
    let key: String
    /// A key with only `sessions`.
    let sessionsKey: String
    let keyring: Keyring
    /// The key ring in settings form.
    let keyringText: String
    let validateTTL: Int
    /// The exact cache and its listener (``TestCache``: as `FBS_CACHE_BYTES` says).
    let testCache: TestCache

    var graph: GraphClient { service.graph }
    var store: PostgresSessionStore { service.store }
    var sessions: SessionService { service.sessions }
    /// The API key store the router uses (its key cache keeps entries for `keyCacheTTL`, none at 0).
    var keys: any KeyStore { service.keys }

    /// - Parameter configure: Swaps parts of the service before it is built (``ServiceParts``).
    init(
        maxSlots: Int = 8, validateTTL: Int = 300, requiredPermissions: [String] = [], keyCacheTTL: Double = 0,
        configure: (inout ServiceParts) -> Void = { _ in }
    ) async throws {
        self.validateTTL = validateTTL
        emulator = Emulator()
        emulatorServer = try emulator.start()
        databaseURL = try TestDatabase.create()
        pool = PostgresPool(configuration: .init(connectionString: databaseURL, size: 6, connectTimeout: .seconds(2)))
        testCache = TestCache(databaseURL: databaseURL)
        (keyring, keyringText) = SecretsTranscript.notingKeyring(Keyring.generate())
        facebookApp = try emulator.registerApp(redirectURIs: ["https://shop.example/callback"])
        environment = [
            "FBS_GRAPH_URL": emulator.baseURL, "FBS_DIALOG_URL": emulator.dialogBaseURL + "/",
            "FBS_LIMITED_JWKS_URL": emulator.limitedJWKSURL, "FBS_LIMITED_UNINSTALL_URL": emulator.limitedUninstallURL,
            "FBS_PUBLIC_URL": Self.publicURL, "FBS_MAX_SLOTS": String(maxSlots), "FBS_VALIDATE_TTL": String(validateTTL),
            "FBS_KEY_CACHE_TTL": String(keyCacheTTL),
        ]
        var parts = try ServiceParts.test(environment)
        parts.cache = .given(testCache.cache)
        configure(&parts)
        service = try ServiceAssembly(parts, database: .test(pool: pool, url: databaseURL, keyring: keyring))
        app = try await service.apps.addApp(
            AppDraft(
                name: "shop", facebookAppID: facebookApp.id, secret: facebookApp.secret,
                redirectURIs: ["https://shop.example/callback"], requiredPermissions: requiredPermissions))
        key = SecretsTranscript.noted("api key", try await service.keys.addKey(appID: app.id, scopes: Scope.allCases).text)
        sessionsKey = SecretsTranscript.noted(
            "api key", try await service.keys.addKey(appID: app.id, scopes: [.sessions]).text)
        server = try service.server(SecretsTranscript.recording)
        client = try Client(configuration: .init(timeout: .seconds(20)))
    }

    /// The parts of another instance of this service (its own pool, cache and listener, as another process would
    /// have): this one's settings with `environment` over them.
    func parts(_ environment: [String: String] = [:], cache: TestCache) throws -> ServiceParts {
        var parts = try ServiceParts.test(self.environment.merging(environment) { $1 })
        parts.cache = .given(cache.cache)
        return parts
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
        service.shutdown()
        testCache.stop()
        pool.shutdown()
        TestDatabase.drop(databaseURL)
    }
}
