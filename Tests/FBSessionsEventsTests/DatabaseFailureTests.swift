import Crypto
import FBSessionsCore
import FBSessionsGraph
import FBSessionsStorage
import Foundation
import Postgres
import TestSupport
import Testing

@testable import fbsessiond

/// The pool connects as a role of its own, and a test takes the role's grant on one table away mid-test (SQLSTATE
/// 42501 on every statement that touches it, as a database failing under the service would). Every path that
/// reads that table answers 503 `database_unavailable` with `Retry-After`: never a 401 that makes the live key look
/// revoked, a 404 that makes the live session look missing, a 400 about a state, or a 500; and nothing changed.
@Suite("A failing database is never the request's fault", .serialized, .enabled(if: TestDatabase.isEnabled))
struct DatabaseFailureTests {
    /// A login role with every grant on a fresh database, and the service connecting as it.
    struct Limited {
        let stack: ServiceStack
        let role: String
        let databaseURL: String

        static func start(keyCacheTTL: Double = 0) async throws -> Limited {
            let databaseURL = try TestDatabase.create()
            let role = "fbs_r_" + UUID().uuidString.prefix(8).lowercased()
            let admin = try PostgresConnection(connectionString: databaseURL)
            defer { admin.close() }
            try admin.simpleQuery(
                unsafeSQL: """
                    CREATE ROLE \(role) LOGIN; GRANT USAGE ON SCHEMA public TO \(role);
                    GRANT ALL ON ALL TABLES IN SCHEMA public TO \(role);
                    GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO \(role)
                    """)
            var components = try #require(URLComponents(string: databaseURL))
            components.user = role
            // Without the exact cache: these tests are about the paths that read the database. (With it, a read it
            // can answer needs no table at all, which is right: docs/caching.md.)
            let stack = try await ServiceStack(
                .init(
                    databaseURL: databaseURL, poolURL: components.string ?? databaseURL, keyCacheTTL: keyCacheTTL,
                    cacheBytes: 0))
            return Limited(stack: stack, role: role, databaseURL: databaseURL)
        }

        /// Takes the role's grant on `table` away.
        func revoke(_ table: String) async throws {
            _ = try await stack.admin("REVOKE ALL ON \(table) FROM \(role)")
        }

        /// Gives it back.
        func restore(_ table: String) async throws {
            _ = try await stack.admin("GRANT ALL ON \(table) TO \(role)")
        }

        func stop() async throws {
            await stack.stop()
            TestDatabase.drop(databaseURL)
            let server = try TestDatabase.requireServerURL()
            let role = role
            _ = try await onThread {
                let admin = try PostgresConnection(connectionString: server)
                defer { admin.close() }
                return try admin.simpleQuery(unsafeSQL: "DROP ROLE IF EXISTS \(role)").count
            }
        }
    }

    /// The answer is the database being unavailable, in the contract's shape.
    private func expectUnavailable(
        _ reply: ServiceStack.Reply, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(reply.status == 503, "\(what): \(reply.status) \(reply.text)", sourceLocation: sourceLocation)
        #expect(reply.errorCode == "database_unavailable", "\(what)", sourceLocation: sourceLocation)
        #expect(reply.header("Retry-After") != nil, "\(what)", sourceLocation: sourceLocation)
    }

    private func login(_ stack: ServiceStack, owner: String) async throws -> String {
        try await loginUser(stack, owner: owner).session
    }

    private func loginUser(_ stack: ServiceStack, owner: String) async throws -> (session: String, user: String) {
        let reply = try await stack.login(owner: owner, token: try stack.userToken().token)
        guard reply.status == 201, let id = reply.json["id"] as? String,
            let user = reply.json["facebook_user_id"] as? String
        else {
            throw TestSetupError("login failed: \(reply.status) \(reply.text)")
        }
        return (id, user)
    }

    /// The key lookup (uncached: the full check; cached: the batched liveness check) when `api_keys` fails: 503, and the key works again afterwards.
    @Test(arguments: [0.0, 300.0]) func theKeyCheck(cacheTTL: Double) async throws {
        let limited = try await Limited.start(keyCacheTTL: cacheTTL)
        let stack = limited.stack
        let session = try await login(stack, owner: "owner-1")
        #expect(try await stack.call("GET", "/v1/app").status == 200)
        try await limited.revoke("api_keys")
        expectUnavailable(try await stack.call("GET", "/v1/app"), "the app, key \(cacheTTL > 0 ? "cached" : "looked up")")
        expectUnavailable(try await stack.call("GET", "/v1/sessions/\(session)?validate=never"), "status")
        expectUnavailable(try await stack.call("GET", "/v1/owners/owner-1/sessions"), "owner list")
        expectUnavailable(try await stack.call("GET", "/v1/sessions/\(session)/picture?redirect=false"), "picture")
        try await limited.restore("api_keys")
        #expect(try await stack.call("GET", "/v1/app").status == 200, "the key was never taken for revoked")
        #expect(try await stack.call("GET", "/v1/sessions/\(session)?validate=never").status == 200)
        try await limited.stop()
    }

    /// Every read and write of sessions when `sessions` fails: 503, and the session is as it was.
    @Test func theSessionPaths() async throws {
        let limited = try await Limited.start()
        let stack = limited.stack
        let (session, facebookUser) = try await loginUser(stack, owner: "owner-1")
        let user = try stack.userToken(name: "Grace Hopper")
        try await limited.revoke("sessions")
        expectUnavailable(try await stack.call("GET", "/v1/sessions/\(session)?validate=never"), "status")
        expectUnavailable(try await stack.call("GET", "/v1/sessions/\(session)?validate=always"), "validation")
        expectUnavailable(try await stack.call("GET", "/v1/owners/owner-1/sessions"), "owner list")
        expectUnavailable(try await stack.call("GET", "/v1/sessions/\(session)/picture"), "picture")
        expectUnavailable(try await stack.call("GET", "/v1/sessions/\(session)/token"), "token")
        expectUnavailable(try await stack.call("DELETE", "/v1/sessions/\(session)"), "logout")
        expectUnavailable(try await stack.call("DELETE", "/v1/sessions/\(session)?revoke=true"), "logout and revoke")
        expectUnavailable(
            try await stack.call("PUT", "/v1/owners/owner-1/active", json: ["session_id": session]), "switch")
        expectUnavailable(try await stack.call("DELETE", "/v1/owners/owner-1/sessions"), "log out all")
        expectUnavailable(try await stack.login(owner: "owner-2", token: user.token), "login")
        // Facebook's deauthorize callback for the logged-in user (app-less path: each app's secret is tried).
        let payload = Base64URL.encode(Array(
            #"{"algorithm":"HMAC-SHA256","issued_at":\#(Int(Date().timeIntervalSince1970)),"user_id":"\#(facebookUser)"}"#
                .utf8))
        let signature = Base64URL.encode(
            HMACSHA256.authenticationCode(for: payload, key: Array(stack.facebookApp.secret.utf8)))
        let form = "signed_request=" + (signature + "." + payload)
        expectUnavailable(try await stack.postForm("/v1/facebook/deauthorize", form), "deauthorize")
        // The sweep's pass fails as a whole; it closes nothing.
        let sweep = try SweepCommand.assembly(stack.runtime)
        defer { sweep.shutdown() }
        await #expect(throws: ServiceError.databaseUnavailable) {
            _ = try await Sweeper(
                service: sweep.sessions, store: sweep.store, policy: SweepCommand.policy(stack.runtime.settings)
            ).pass()
        }
        try await limited.restore("sessions")
        let status = try await stack.call("GET", "/v1/sessions/\(session)?validate=never")
        #expect(status.status == 200 && status.json["state"] as? String != "closed", "nothing changed")
        let list = try await stack.call("GET", "/v1/owners/owner-1/sessions")
        #expect((list.json["sessions"] as? [Any])?.count == 1)
        #expect(try await stack.postForm("/v1/facebook/deauthorize", form).status == 200)
        let closed = try await stack.call("GET", "/v1/sessions/\(session)?validate=never")
        #expect(closed.json["state"] as? String == "closed" && closed.json["closed_reason"] as? String == "app_removed")
        try await limited.stop()
    }

    /// The picture cache, login states and the change feed, each failing on its own.
    @Test func thePictureLoginStatesAndFeed() async throws {
        let limited = try await Limited.start()
        let stack = limited.stack
        let session = try await login(stack, owner: "owner-1")
        try await limited.revoke("picture_cache")
        expectUnavailable(try await stack.call("GET", "/v1/sessions/\(session)/picture"), "picture")
        expectUnavailable(try await stack.call("GET", "/v1/sessions/\(session)/picture?redirect=false"), "picture JSON")
        try await limited.restore("picture_cache")
        #expect(try await stack.call("GET", "/v1/sessions/\(session)/picture?redirect=false").status == 200)

        let made = try await stack.call(
            "POST", "/v1/login-urls",
            json: ["owner": "owner-1", "redirect_uri": "https://shop.example/callback", "scopes": ["email"]])
        let state = try #require(made.json["state"] as? String)
        try await limited.revoke("login_states")
        expectUnavailable(
            try await stack.call("POST", "/v1/sessions", json: ["owner": "owner-1", "code": "not-a-code", "state": state]),
            "code login")
        expectUnavailable(
            try await stack.call(
                "POST", "/v1/login-urls",
                json: ["owner": "owner-1", "redirect_uri": "https://shop.example/callback", "scopes": ["email"]]),
            "login URL")
        try await limited.restore("login_states")
        // The state was not used up by the failed attempt: Graph now refuses the code, not the state.
        let retried = try await stack.call(
            "POST", "/v1/sessions", json: ["owner": "owner-1", "code": "not-a-code", "state": state])
        #expect(!["invalid_state", "state_used", "state_expired"].contains(retried.errorCode ?? ""), "\(retried.text)")

        try await limited.revoke("events")
        expectUnavailable(try await stack.call("GET", "/v1/events"), "feed")
        expectUnavailable(try await stack.call("GET", "/v1/events?wait=1"), "long poll")
        try await limited.restore("events")
        #expect(try await stack.call("GET", "/v1/events").status == 200)
        try await limited.stop()
    }
}
