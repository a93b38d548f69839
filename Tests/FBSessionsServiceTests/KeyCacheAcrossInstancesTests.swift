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

/// The API key cache never serves a revoked key, and sessions are never served stale, across instances
/// (docs/caching.md): two instances on one real database, over real sockets.
@Suite(.enabled(if: TestDatabase.isEnabled), .serialized) struct KeyCacheAcrossInstancesTests {
    @Test func aKeyRevokedOnOneInstanceIsRefusedByTheNextRequestOnTheOther() async throws {
        let harness = try await SessionHarness(keyCacheTTL: 3600)
        defer { harness.stop() }
        let other = try await SecondInstance(harness, keyCacheTTL: 3600, validateTTL: harness.validateTTL)
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
        let other = try await SecondInstance(harness, keyCacheTTL: 3600, validateTTL: harness.validateTTL)
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
        let other = try await SecondInstance(harness, keyCacheTTL: 3600, validateTTL: harness.validateTTL)
        defer { other.stop() }
        #expect(try await other.call("GET", "/v1/sessions/not-a-session-id", key: harness.key).status == 404)
        #expect(try await harness.keys.revokeKey(id: try #require(APIKeyText.id(in: harness.key))))
        #expect(try await other.call("GET", "/v1/sessions/not-a-session-id", key: harness.key).status == 401)
        #expect(try await other.call("GET", "/v1/owners/o/sessions", key: harness.key).status == 401)
    }
}
