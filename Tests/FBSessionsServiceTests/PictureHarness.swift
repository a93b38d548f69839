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

/// The picture route end to end: the Graph emulator over real HTTP (its CDN, or a scripted peer standing in for a
/// hostile one), a fresh database, and the service on a real socket with a ``PictureService`` configured per test.
final class PictureHarness: Sendable {
    /// The exact cache and its listener (``TestCache``).
    let testCache: TestCache
    /// How the picture service is set up.
    struct Options {
        var hosts = ["127.0.0.1"]
        var allowHTTP = true
        /// Where the emulator's picture URLs point (a scripted CDN); nil: its own CDN.
        var cdnBaseURL: String?
        var maxBytes = 5_242_880
        var fetchTimeout = 3.0
        var ttl = 3600.0
        var memory = true
        /// Turns tracing on, with spans kept here.
        var spanExporter: InMemorySpanExporter?
    }

    let emulator: Emulator
    let emulatorServer: Server
    let databaseURL: String
    let pool: PostgresPool
    let service: ServiceAssembly
    let server: Server
    let client: Client
    let facebookApp: EmulatedApp
    let app: App
    let key: String
    let options: Options
    let keyring: Keyring
    /// The service's picture service.
    let pictures: PictureService

    var database: Database { service.database.database }
    var graph: GraphClient { service.graph }
    var fetcher: PictureFetcher { service.pictureFetcher }
    var sessions: SessionService { service.sessions }

    init(_ options: Options = Options()) async throws {
        self.options = options
        var configuration = Emulator.Configuration()
        configuration.publicBaseURL = options.cdnBaseURL
        emulator = Emulator(configuration: configuration)
        emulatorServer = try emulator.start()
        databaseURL = try TestDatabase.create()
        pool = PostgresPool(configuration: .init(connectionString: databaseURL, size: 8, connectTimeout: .seconds(2)))
        testCache = TestCache(databaseURL: databaseURL)
        (keyring, _) = SecretsTranscript.notingKeyring(Keyring.generate())
        facebookApp = try emulator.registerApp(requiresProof: true)
        var parts = try ServiceParts.test([
            "FBS_GRAPH_URL": "http://127.0.0.1:\(emulatorServer.port)",
            "FBS_PICTURE_HOSTS": options.hosts.joined(separator: ","), "FBS_PICTURE_ALLOW_HTTP": String(options.allowHTTP),
        ])
        parts.cache = .given(testCache.cache)
        parts.pictures = .init(
            ttl: options.ttl, limits: PictureFetchLimits(maxBytes: options.maxBytes, timeout: options.fetchTimeout),
            graphTimeout: 3)
        parts.keepsPicturesInMemory = options.memory
        if let exporter = options.spanExporter {
            parts.settings.tracing = TracingServiceTests.inMemoryTracing
            parts.spanExporter = exporter
        }
        service = try ServiceAssembly(parts, database: .test(pool: pool, url: databaseURL, keyring: keyring))
        guard let pictures = service.routes.pictures else { throw TestSetupError("the service has no pictures") }
        self.pictures = pictures
        app = try await service.apps.addApp(
            AppDraft(name: "shop", facebookAppID: facebookApp.id, secret: facebookApp.secret, redirectURIs: [],
                     requiredPermissions: []))
        key = SecretsTranscript.noted("api key", try await service.keys.addKey(appID: app.id, scopes: [.sessions]).text)
        server = try service.server(SecretsTranscript.recording)
        client = try Client(configuration: .init(timeout: .seconds(20)))
    }

    /// Another service instance over the same database (its own single flight and memory), as a second process
    /// would have.
    func secondInstance() -> PictureService {
        service.pictureService()
    }

    /// A new emulated user logged in for `owner`; returns the user and the session id.
    func loggedIn(owner: String = "owner-1", hasPicture: Bool = true) async throws -> (user: EmulatedUser, session: String) {
        let user = try emulator.createUser(firstName: "Ada", lastName: "Lovelace", hasPicture: hasPicture)
        let token = try emulator.issueToken(appID: facebookApp.id, userID: user.id, granted: ["public_profile"])
        let reply = try await call("POST", "/v1/sessions", json: ["owner": owner, "access_token": token.accessToken])
        guard reply.status == 201, let id = reply.json["id"] as? String else {
            throw TestSetupError("login failed: \(reply.status) \(reply.text)")
        }
        emulator.resetCounters()
        return (user, id)
    }

    typealias Reply = SessionHarness.Reply

    func call(_ method: String, _ path: String, json: Any? = nil, headers extra: [(String, String)] = []) async throws
        -> Reply
    {
        var headers = [("Authorization", "Bearer \(key)")] + extra
        var body: [UInt8]?
        if let json {
            body = Array(try JSONSerialization.data(withJSONObject: json))
            headers.append(("Content-Type", "application/json"))
        }
        let response = try await client.execute(
            ClientRequest(method: method, url: "http://127.0.0.1:\(server.port)\(path)", headers: headers, body: body))
        return Reply(status: response.status, headers: response.headers, body: response.body)
    }

    /// `GET /v1/sessions/{id}/picture` with a query and optional `If-None-Match`.
    func picture(_ session: String, _ query: String = "", ifNoneMatch: String? = nil) async throws -> Reply {
        try await call(
            "GET", "/v1/sessions/\(session)/picture" + (query.isEmpty ? "" : "?" + query),
            headers: ifNoneMatch.map { [("If-None-Match", $0)] } ?? [])
    }

    /// The bytes the emulator's CDN serves at `url`, fetched directly.
    func cdnBytes(_ url: String) async throws -> [UInt8] {
        let response = try await client.execute(ClientRequest(url: url))
        guard response.status == 200 else { throw TestSetupError("CDN answered \(response.status)") }
        return response.body
    }

    /// Rows of a query on the test database.
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
