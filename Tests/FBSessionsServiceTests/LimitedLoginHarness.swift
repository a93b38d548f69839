import Crypto
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
import Tracing

/// Limited Login end to end: a ``SessionHarness`` (its emulator plays Limited Login's Facebook too: key set,
/// tokens, uninstall) whose signing-key cache runs on a ``ManualClock``, so tests decide when its one-a-minute
/// refetch budget allows a fetch.
final class LimitedLoginHarness: Sendable {
    let base: SessionHarness
    let clock: ManualClock
    let keys: SigningKeyCache
    let limited: LimitedLogin
    /// A second tenant with its own key.
    let otherApp: App
    let otherKey: String

    var server: Server { base.server }
    var sessions: SessionService { base.sessions }
    var database: Database { base.service.database.database }
    var limitedClient: LimitedLoginClient { base.service.limitedLoginClient }
    var emulator: Emulator { base.emulator }
    var facebookAppID: String { base.facebookApp.id }

    init(
        nonceLifetime: Double = 600, keyPolicy: SigningKeyCache.Policy = .init(), fetchTimeout: Duration = .seconds(2),
        spanExporter: InMemorySpanExporter? = nil
    ) async throws {
        let clock = ManualClock()
        self.clock = clock
        base = try await SessionHarness { parts in
            parts.signingKeys = keyPolicy
            parts.signingKeyClock = { clock.now }
            parts.limitedLogin.nonceLifetime = nonceLifetime
            parts.limitedLoginClient.timeout = fetchTimeout
            parts.pictures.urlExpiryMargin = 0
            if let spanExporter {
                parts.settings.tracing = TracingServiceTests.inMemoryTracing
                parts.spanExporter = spanExporter
            }
        }
        guard let keys = base.service.routes.signingKeys, let limited = base.service.routes.limitedLogin else {
            throw TestSetupError("the service has no Limited Login")
        }
        self.keys = keys
        self.limited = limited
        otherApp = try await base.service.apps.addApp(
            AppDraft(
                name: "other-shop", facebookAppID: "777000111",
                secret: SecretsTranscript.noted("app secret", "other-shop-secret"), redirectURIs: [],
                requiredPermissions: []))
        otherKey = SecretsTranscript.noted(
            "api key", try await base.keys.addKey(appID: otherApp.id, scopes: Scope.allCases).text)
    }

    func stop() {
        base.stop()
    }

    typealias Reply = SessionHarness.Reply

    // MARK: Calls

    func call(_ method: String, _ path: String, json: Any? = nil, rawBody: String? = nil, key: String? = nil)
        async throws -> Reply
    {
        var headers = [("Authorization", "Bearer \(key ?? base.key)")]
        var body: [UInt8]?
        if let json {
            body = Array(try JSONSerialization.data(withJSONObject: json))
        } else if let rawBody {
            body = Array(rawBody.utf8)
        }
        if body != nil { headers.append(("Content-Type", "application/json")) }
        let response = try await base.client.execute(
            ClientRequest(method: method, url: "http://127.0.0.1:\(server.port)\(path)", headers: headers, body: body))
        return Reply(status: response.status, headers: response.headers, body: response.body)
    }

    /// A form POST without a key, as Facebook sends its callbacks.
    func callback(_ path: String, signedRequest: String) async throws -> Reply {
        let response = try await base.client.execute(
            ClientRequest(
                method: "POST", url: "http://127.0.0.1:\(server.port)\(path)",
                headers: [("Content-Type", "application/x-www-form-urlencoded")],
                body: Array(("signed_request=" + TestForm.encode(signedRequest)).utf8)))
        return Reply(status: response.status, headers: response.headers, body: response.body)
    }

    /// A nonce from `POST /v1/login-nonces`.
    func nonce(owner: String, slot: Int? = nil, key: String? = nil) async throws -> String {
        var body: [String: Any] = ["owner": owner]
        if let slot { body["slot"] = slot }
        let reply = try await call("POST", "/v1/login-nonces", json: body, key: key)
        guard reply.status == 201, let nonce = reply.json["nonce"] as? String else {
            throw TestSetupError("login-nonces answered \(reply.status): \(reply.text)")
        }
        return nonce
    }

    /// A new emulated user.
    func user(_ name: String = "Grace Hopper", email: String? = "grace@example.com", hasPicture: Bool = true) throws
        -> EmulatedUser
    {
        let parts = name.split(separator: " ").map(String.init)
        return try emulator.createUser(
            firstName: parts.first, lastName: parts.count > 1 ? parts.last : nil, name: name, email: email,
            hasPicture: hasPicture)
    }

    /// A token the emulator signs for `userID` of this app with `nonce`, adjusted by `adjust`.
    func mint(
        _ userID: String, nonce: String, _ adjust: (inout AuthenticationTokenRequest) -> Void = { _ in }
    ) throws -> String {
        var request = AuthenticationTokenRequest(appID: facebookAppID, userID: userID, nonce: nonce)
        adjust(&request)
        return try emulator.mintAuthenticationToken(request).token
    }

    /// `POST /v1/sessions` with `authentication_token`.
    func login(owner: String, token: String, slot: Int? = nil, activate: Bool? = nil, key: String? = nil)
        async throws -> Reply
    {
        var body: [String: Any] = ["owner": owner, "authentication_token": token]
        if let slot { body["slot"] = slot }
        if let activate { body["activate"] = activate }
        return try await call("POST", "/v1/sessions", json: body, key: key)
    }

    /// A whole limited login of a new user for `owner`: nonce, token, login; the session's JSON.
    func loggedIn(owner: String, user: EmulatedUser? = nil) async throws -> (user: EmulatedUser, session: [String: Any]) {
        let person = try user ?? self.user()
        let reply = try await login(owner: owner, token: try mint(person.id, nonce: try await nonce(owner: owner)))
        guard reply.status == 201 || reply.status == 200 else {
            throw TestSetupError("limited login answered \(reply.status): \(reply.text)")
        }
        return (person, reply.json)
    }

    // MARK: The database

    /// One integer of a query (`SELECT count(*) AS n ...`).
    func count(_ query: PostgresQuery) async throws -> Int {
        try await base.rows(query).first?.decode("n", as: Int.self) ?? -1
    }

    /// Sessions, events and used nonces: what a refused login must leave unchanged.
    func footprint() async throws -> [Int] {
        [
            try await count("SELECT count(*)::int AS n FROM sessions"),
            try await count("SELECT count(*)::int AS n FROM events"),
            try await count("SELECT count(*)::int AS n FROM login_nonces WHERE used_at IS NOT NULL"),
            try await count("SELECT count(*)::int AS n FROM owners"),
        ]
    }
}

/// A second service instance on the harness's database and emulator: its own pool, key-set cache and Limited Login,
/// as another process would have.
final class LimitedLoginSecondInstance: Sendable {
    let harness: LimitedLoginHarness
    let pool: PostgresPool
    let service: ServiceAssembly
    let server: Server
    let testCache: TestCache

    init(_ harness: LimitedLoginHarness) async throws {
        self.harness = harness
        pool = PostgresPool(configuration: .init(connectionString: harness.base.databaseURL, size: 4))
        testCache = TestCache(databaseURL: harness.base.databaseURL)
        service = try ServiceAssembly(
            try harness.base.parts(cache: testCache),
            database: .test(pool: pool, url: harness.base.databaseURL, keyring: harness.base.keyring))
        server = try service.server(SecretsTranscript.recording)
    }

    /// `POST /v1/sessions` with `authentication_token`, on this instance.
    func login(owner: String, token: String) async throws -> SessionHarness.Reply {
        let response = try await harness.base.client.execute(
            ClientRequest(
                method: "POST", url: "http://127.0.0.1:\(server.port)/v1/sessions",
                headers: [("Authorization", "Bearer \(harness.base.key)"), ("Content-Type", "application/json")],
                body: Array(try JSONSerialization.data(withJSONObject: ["owner": owner, "authentication_token": token]))))
        return SessionHarness.Reply(status: response.status, headers: response.headers, body: response.body)
    }

    func stop() {
        server.shutdown(gracePeriod: 0)
        service.shutdown()
        testCache.stop()
        pool.shutdown()
    }
}

/// Forged tokens, for the refusals the emulator does not sign itself.
enum ForgedToken {
    /// `base64url(header).base64url(payload).base64url(signature)` from raw parts.
    static func compact(header: String, payload: String, signature: [UInt8]) -> String {
        Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(payload.utf8)) + "."
            + Base64URL.encode(signature)
    }

    /// The header and payload of a token, decoded.
    static func parts(_ token: String) -> (header: String, payload: String, signature: [UInt8]) {
        let pieces = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        return (
            String(decoding: Base64URL.decode(pieces[0]) ?? [], as: UTF8.self),
            String(decoding: Base64URL.decode(pieces[1]) ?? [], as: UTF8.self), Base64URL.decode(pieces[2]) ?? []
        )
    }

    /// A token with the same payload under another header, HMAC-SHA256-signed with `secret` (the "use the public key
    /// as the HMAC secret" attack).
    static func hs256(_ token: String, kid: String, secret: [UInt8]) -> String {
        let (_, payload, _) = parts(token)
        let header = #"{"alg":"HS256","kid":"\#(kid)","typ":"JWT"}"#
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(payload.utf8))
        return input + "." + Base64URL.encode(HMACSHA256.authenticationCode(for: input, key: secret))
    }
}
