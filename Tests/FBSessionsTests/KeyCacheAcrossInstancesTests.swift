import FBSessionsAPI
import FBSessionsCore
import FBSessionsGraph
import FBSessionsStorage
import Foundation
import HTTPClient
import HTTPServer
import Postgres
import Support
import Testing
import TestSupport

/// A second instance of the service on the same database as a ``SessionHarness``: its own pool, its own key cache,
/// its own server on a real socket.
private final class CachingInstance: Sendable {
    let pool: PostgresPool
    let server: Server
    let client: Client
    let fetcher: PictureFetcher

    init(beside harness: SessionHarness, keyCacheTTL: Double) throws {
        pool = PostgresPool(configuration: .init(connectionString: harness.databaseURL, size: 4, connectTimeout: .seconds(2)))
        let database = Database(pool: pool)
        let apps = PostgresAppStore(database: database, keyring: harness.keyring)
        let keys = CachedKeyStore(PostgresKeyStore(database: database), ttl: keyCacheTTL)
        let store = PostgresSessionStore(database: database, keyring: harness.keyring)
        let sessions = SessionService(
            store: store, graph: harness.graph, apps: apps,
            policy: .init(
                validateTTL: harness.validateTTL, refreshAfter: 86_400, maxSlots: 8, graphVersion: nil, graphTimeout: 3))
        fetcher = try PictureFetcher(allowsHTTP: true)
        let metrics = MetricsRegistry()
        let services = Services(
            apps: apps, keys: keys,
            readiness: PostgresReadiness(database: database, migrator: Migrator(migrations: try TestDatabase.migrations())),
            metrics: metrics, openAPIDocument: [], sessions: sessions, maxSlots: 8,
            pictures: PictureService(
                sessions: sessions, store: PostgresPictureStore(database: database), fetcher: fetcher,
                urlPolicy: PictureURLPolicy(hostSuffixes: ["127.0.0.1"], allowsHTTP: true)))
        let router = Router(
            routes: APIRoutes.all(services), keys: keys,
            observer: Observer(metrics: metrics, logger: SecretsTranscript.logger("http", level: .error)))
        var configuration = ServerConfiguration()
        configuration.port = 0
        server = try Server(configuration: configuration, handler: SecretsTranscript.recording(router))
        client = try Client(configuration: .init(timeout: .seconds(20)))
    }

    func call(_ method: String, _ path: String, key: String) async throws -> SessionHarness.Reply {
        let response = try await client.execute(
            ClientRequest(
                method: method, url: "http://127.0.0.1:\(server.port)\(path)",
                headers: [("Authorization", "Bearer \(key)")], body: nil))
        return SessionHarness.Reply(status: response.status, headers: response.headers, body: response.body)
    }

    func stop() {
        server.shutdown(gracePeriod: 0)
        client.shutdown()
        fetcher.shutdown()
        pool.shutdown()
    }
}

/// The API key cache never serves a revoked key, and sessions are never served stale, across instances
/// (docs/caching.md): two instances on one real database, over real sockets.
@Suite(.enabled(if: TestDatabase.isEnabled), .serialized) struct KeyCacheAcrossInstancesTests {
    @Test func aKeyRevokedOnOneInstanceIsRefusedByTheNextRequestOnTheOther() async throws {
        let harness = try await SessionHarness(keyCacheTTL: 3600)
        defer { harness.stop() }
        let other = try CachingInstance(beside: harness, keyCacheTTL: 3600)
        defer { other.stop() }
        let (_, token) = try harness.userToken()
        let id = try #require(try await harness.login(owner: "o-1", token: token).json["id"] as? String)
        let key = harness.key
        let keyID = try #require(APIKeyText.id(in: key))
        // Instance B caches the key, through every kind of route: folded reads, a plain read, a write.
        let paths = [
            ("GET", "/v1/sessions/\(id)?validate=never"), ("GET", "/v1/sessions/ses_unknownunknownunknown1"),
            ("GET", "/v1/owners/o-1/sessions"), ("GET", "/v1/app"), ("GET", "/v1/sessions/\(id)/token"),
        ]
        for (method, path) in paths {
            let reply = try await other.call(method, path, key: key)
            #expect([200, 404].contains(reply.status), "\(path) \(reply.status)")
        }
        // Revoked through instance A's key store (as the CLI does), committed before B's next request starts.
        #expect(try await harness.keys.revokeKey(id: keyID))
        for (method, path) in paths + [("GET", "/v1/sessions/\(id)/picture"), ("DELETE", "/v1/sessions/\(id)")] {
            let reply = try await other.call(method, path, key: key)
            #expect(reply.status == 401, "\(method) \(path) gave \(reply.status)")
            #expect(reply.errorCode == "unauthorized")
        }
        // The refused logout changed nothing; the other key still works on B, and sees the session open.
        let still = try await other.call("GET", "/v1/sessions/\(id)?validate=never", key: harness.sessionsKey)
        #expect(still.status == 200 && still.json["state"] as? String != "closed")
    }

    @Test func aSessionLoggedOutOnOneInstanceIsClosedOnTheNextStatusOnTheOther() async throws {
        let harness = try await SessionHarness(keyCacheTTL: 3600)
        defer { harness.stop() }
        let other = try CachingInstance(beside: harness, keyCacheTTL: 3600)
        defer { other.stop() }
        let (_, token) = try harness.userToken()
        let id = try #require(try await harness.login(owner: "o-2", token: token).json["id"] as? String)
        for mode in ["never", "auto"] {
            let open = try await other.call("GET", "/v1/sessions/\(id)?validate=\(mode)", key: harness.key)
            #expect(open.status == 200 && open.json["state"] as? String == "open")
        }
        let listed = try await other.call("GET", "/v1/owners/o-2/sessions", key: harness.key)
        #expect((listed.json["sessions"] as? [Any])?.count == 1)
        #expect(try await harness.call("DELETE", "/v1/sessions/\(id)").status == 200)
        for mode in ["never", "auto"] {
            let closed = try await other.call("GET", "/v1/sessions/\(id)?validate=\(mode)", key: harness.key)
            #expect(closed.status == 200 && closed.json["state"] as? String == "closed")
            #expect(closed.json["closed_reason"] as? String == "logged_out")
        }
        let emptied = try await other.call("GET", "/v1/owners/o-2/sessions", key: harness.key)
        #expect((emptied.json["sessions"] as? [Any])?.isEmpty == true)
        #expect(try await other.call("GET", "/v1/sessions/\(id)/token", key: harness.key).status == 410)
    }

    @Test func aRevokedKeyIsRefusedEvenWhenTheHandlerNeedsNoStatement() async throws {
        // An impossible session id is answered (404) before any statement runs; the router must still confirm
        // the key.
        let harness = try await SessionHarness(keyCacheTTL: 3600)
        defer { harness.stop() }
        let other = try CachingInstance(beside: harness, keyCacheTTL: 3600)
        defer { other.stop() }
        #expect(try await other.call("GET", "/v1/sessions/not-a-session-id", key: harness.key).status == 404)
        #expect(try await harness.keys.revokeKey(id: try #require(APIKeyText.id(in: harness.key))))
        #expect(try await other.call("GET", "/v1/sessions/not-a-session-id", key: harness.key).status == 401)
        #expect(try await other.call("GET", "/v1/owners/o/sessions", key: harness.key).status == 401)
    }
}
