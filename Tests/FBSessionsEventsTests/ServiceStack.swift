import FBSessionsCore
import FBSessionsStorage
import Foundation
import GraphEmulator
import HTTPClient
import HTTPServer
import LocalCluster
import Postgres
import TestSupport

@testable import fbsessiond

/// The whole service as `fbsessiond serve` wires it (``ServiceHost/start(_:)`` on a ``Runtime`` made from
/// settings), on a real socket, with the Graph emulator over real HTTP, a real database (directly, through a
/// PgBouncer, or as a role whose grants a test takes away), an app, a key with every scope, and a webhook peer.
final class ServiceStack: Sendable {
    /// How the stack is set up.
    struct Options: Sendable {
        /// An existing migrated database (its direct URL); nil creates one on the test server.
        var databaseURL: String?
        /// The pool's URL, when not the direct one (a pooler, another role).
        var poolURL: String?
        /// `FBS_DB_PREPARED_STATEMENTS`; nil leaves it unset (automatic).
        var preparedStatements: Bool?
        /// Whether `FBS_DIRECT_DATABASE_URL` is set (to the direct URL).
        var setsDirectURL = true
        /// `FBS_STATEMENT_TIMEOUT`, seconds.
        var statementTimeout = 10.0
        /// `FBS_DB_ACQUIRE_TIMEOUT`, seconds.
        var acquireTimeout = 5.0
        /// `FBS_DB_POOL_SIZE`.
        var poolSize = 8
        /// `FBS_KEY_CACHE_TTL`, seconds.
        var keyCacheTTL = 0.0
        /// `FBS_CACHE_BYTES`; by default what the suite runs with (``TestCache/configuredBytes``).
        var cacheBytes = TestCache.configuredBytes
    }

    let options: Options
    let emulator: Emulator
    let emulatorServer: Server
    /// The database's direct URL (superuser).
    let directURL: String
    let createdDatabase: Bool
    let runtime: Runtime
    let service: RunningService
    let facebookApp: EmulatedApp
    let app: App
    let keyring: Keyring
    /// A key with every scope.
    let key: String
    let client: Client

    init(_ options: Options = Options()) async throws {
        self.options = options
        emulator = Emulator()
        emulatorServer = try emulator.start()
        createdDatabase = options.databaseURL == nil
        directURL = try options.databaseURL ?? TestDatabase.create()
        let (keyring, keyringText) = SecretsTranscript.notingKeyring(Keyring.generate())
        self.keyring = keyring
        var environment = [
            "DATABASE_URL": options.poolURL ?? directURL, "FBS_ENCRYPTION_KEYS": keyringText,
            "FBS_LISTEN": "127.0.0.1:0", "FBS_GRAPH_URL": emulator.baseURL, "FBS_DIALOG_URL": emulator.baseURL,
            "FBS_PICTURE_HOSTS": "127.0.0.1", "FBS_PICTURE_ALLOW_HTTP": "true", "FBS_LOG_LEVEL": "error",
            "FBS_GRAPH_TIMEOUT": "3", "FBS_SWEEP_INTERVAL": "0", "FBS_SHUTDOWN_GRACE": "0",
            "FBS_STATEMENT_TIMEOUT": String(options.statementTimeout),
            "FBS_DB_ACQUIRE_TIMEOUT": String(options.acquireTimeout), "FBS_DB_POOL_SIZE": String(options.poolSize),
            "FBS_KEY_CACHE_TTL": String(options.keyCacheTTL), "FBS_CACHE_BYTES": String(options.cacheBytes),
        ]
        if options.setsDirectURL { environment["FBS_DIRECT_DATABASE_URL"] = directURL }
        if let prepared = options.preparedStatements { environment["FBS_DB_PREPARED_STATEMENTS"] = String(prepared) }
        runtime = try Runtime(settings: try Runtime.settings(environment))
        facebookApp = try emulator.registerApp(redirectURIs: ["https://shop.example/callback"])
        app = try await runtime.apps.addApp(
            AppDraft(
                name: "shop", facebookAppID: facebookApp.id, secret: facebookApp.secret,
                redirectURIs: ["https://shop.example/callback"], requiredPermissions: []))
        key = SecretsTranscript.noted(
            "api key", try await runtime.keys.addKey(appID: app.id, scopes: Scope.allCases).text)
        service = try ServiceHost.start(runtime)
        client = try Client(configuration: .init(timeout: .seconds(30)))
    }

    /// The service's port.
    var port: Int { service.server.port }

    /// A new emulated user and a token of it for this app.
    func userToken(name: String = "Ada Lovelace") throws -> (user: EmulatedUser, token: String) {
        let user = try emulator.createUser(name: name, email: "ada@example.com")
        let token = try emulator.issueToken(
            appID: facebookApp.id, userID: user.id, longLived: true, granted: ["public_profile", "email"])
        return (user, SecretsTranscript.noted("access token", token.accessToken))
    }

    /// An answer of the service.
    struct Reply: Sendable {
        let status: Int
        let headers: [(String, String)]
        let body: [UInt8]
        let took: Duration
        var json: [String: any Sendable] {
            ((try? JSONSerialization.jsonObject(with: Data(body))) as? [String: any Sendable]) ?? [:]
        }
        var errorCode: String? { (json["error"] as? [String: any Sendable])?["code"] as? String }
        var text: String { String(decoding: body, as: UTF8.self) }
        func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
    }

    /// One request with the stack's key (or `key`).
    func call(_ method: String, _ path: String, json: [String: any Sendable]? = nil, key: String? = nil)
        async throws -> Reply
    {
        var headers = [("Authorization", "Bearer \(key ?? self.key)")]
        var body: [UInt8]?
        if let json {
            body = Array(try JSONSerialization.data(withJSONObject: json))
            headers.append(("Content-Type", "application/json"))
        }
        let start = ContinuousClock.now
        let response = try await client.execute(
            ClientRequest(method: method, url: "http://127.0.0.1:\(port)\(path)", headers: headers, body: body))
        return Reply(
            status: response.status, headers: response.headers, body: response.body, took: ContinuousClock.now - start)
    }

    /// A form POST without a key (Facebook's callbacks).
    func postForm(_ path: String, _ body: String) async throws -> Reply {
        let start = ContinuousClock.now
        let response = try await client.execute(
            ClientRequest(
                method: "POST", url: "http://127.0.0.1:\(port)\(path)",
                headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Array(body.utf8)))
        return Reply(
            status: response.status, headers: response.headers, body: response.body, took: ContinuousClock.now - start)
    }

    /// A login of `owner` with a token.
    func login(owner: String, token: String, slot: Int? = nil) async throws -> Reply {
        var body: [String: any Sendable] = ["owner": owner, "access_token": token]
        if let slot { body["slot"] = slot }
        return try await call("POST", "/v1/sessions", json: body)
    }

    /// A statement on the direct URL as the superuser (grants, checks), on a thread of its own.
    func admin(_ sql: String) async throws -> PostgresRows {
        let url = directURL
        return try await onThread {
            let connection = try PostgresConnection(connectionString: url)
            defer { connection.close() }
            return try connection.simpleQuery(unsafeSQL: sql)
        }
    }

    func stop() async {
        await service.stop(reason: "test")
        client.shutdown()
        emulatorServer.shutdown(gracePeriod: 0)
        if createdDatabase { TestDatabase.drop(directURL) }
    }
}

/// Polls `condition` every 10 ms until it holds or `timeout` passes; returns whether it held.
func waitUntil(timeout: Duration, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return try await condition()
}
