import FBSessionsAPI
import FBSessionsCore
import FBSessionsService
import FBSessionsGraph
import FBSessionsStorage
import Foundation
import HTTPClient
import HTTPServer
import Support
import Testing
import TestSupport

/// Every operation of `openapi.yaml` that names a scope, called over a real socket on a real database with each
/// kind of bad credential: no key, malformed keys, a revoked key, another app's key, and a key of this app that
/// lacks the operation's scope. The list of operations is read from the spec, so a new route is covered (or this
/// test fails asking for a way to call it) without anyone remembering to add it.
///
/// Each answer must have the status the contract gives (401 with `WWW-Authenticate: Bearer`, 403, or, for another
/// app's key, 404 on this app's resource ids and this app's nothing elsewhere), a bare error body, and none of the
/// victim app's data; and nothing may change: the victim's session stays open with its token.
@Suite(.enabled(if: TestDatabase.isEnabled)) struct AuthorizationMatrixTests {
    /// The victim app's data that must not appear in any answer to a bad credential.
    struct Victim {
        let sessionID: String
        let owner: String
        let facebookUserID: String
        let name: String
        let token: String
        let appID: String
        var secrets: [String] { [sessionID, facebookUserID, name, token, appID] }
    }

    @Test func everyScopedOperationRefusesEveryBadCredential() async throws {
        // Every part wired as `fbsessiond serve` wires it, with a key cache of 1 s.
        let harness = try await SessionHarness(keyCacheTTL: 1)
        defer { harness.stop() }
        let operations = OpenAPISpec.specSecurity(try OpenAPISpec.specText()).filter { $0.scopes != nil }
        #expect(operations.count >= 10, "the spec parser found too few secured operations: \(operations)")

        // The victim: one open session of the harness's app.
        let owner = "victim/owner@1"
        let (user, token) = try harness.userToken(name: "Victoria Victim")
        let login = try await harness.login(owner: owner, token: token)
        try #require(login.status == 201)
        let victim = Victim(
            sessionID: try #require(login.json["id"] as? String), owner: owner, facebookUserID: user.id,
            name: "Victoria Victim", token: token, appID: harness.app.id)

        // Keys: one per missing scope, one revoked, one of another app (with every scope).
        let keys = PostgresKeyStore(database: Database(pool: harness.pool))
        var lacking: [String: String] = [:]
        for scope in Scope.allCases {
            let made = try await keys.addKey(appID: harness.app.id, scopes: Scope.allCases.filter { $0 != scope })
            lacking[scope.rawValue] = SecretsTranscript.noted("api key", made.text)
        }
        // Revoked the way an operator does it (`fbsessiond key revoke`, another process) after it had been used: the
        // service's key cache may keep it for FBS_KEY_CACHE_TTL (here 1 s), never longer.
        let revokedKey = try await keys.addKey(appID: harness.app.id, scopes: Scope.allCases)
        SecretsTranscript.noted("api key", revokedKey.text)
        #expect(try await harness.call("GET", "/v1/app", authorization: "Bearer \(revokedKey.text)", json: nil).status == 200)
        #expect(try await keys.revokeKey(id: revokedKey.key.id))
        try await Task.sleep(for: .milliseconds(1100))
        // Another tenant, registered with Facebook (the emulator) too, with every scope.
        let otherFacebookApp = try harness.emulator.registerApp(redirectURIs: ["https://other.example/callback"])
        let otherApp = try await PostgresAppStore(database: Database(pool: harness.pool), keyring: harness.keyring).addApp(
            AppDraft(
                name: "other", facebookAppID: otherFacebookApp.id, secret: otherFacebookApp.secret,
                redirectURIs: ["https://other.example/callback"], requiredPermissions: []))
        let otherAppKey = SecretsTranscript.noted(
            "api key", try await keys.addKey(appID: otherApp.id, scopes: Scope.allCases).text)
        let goodID = try #require(APIKeyText.id(in: harness.key))
        let malformed = [
            "garbage", "fbs_", "fbs_\(goodID)_", "fbs_\(goodID)_wrong-secret", Self.withLastCharacterChanged(harness.key),
            harness.key + "x", "fbs_../../etc_x", String(repeating: "A", count: 4096), "fbs_k%00_x",
        ]

        var calls = 0
        for operation in operations {
            let scope = try #require(operation.scopes?.first, "\(operation) names no scope")
            let target = try Self.concretePath(operation.path, victim: victim)
            let body = Self.body(for: operation.operationID, victim: victim)

            func call(_ authorization: String?) async throws -> SessionHarness.Reply {
                calls += 1
                return try await harness.call(operation.method, target, authorization: authorization, json: body)
            }

            // No key, and Authorization headers that are not a bearer key.
            for authorization in [nil, "", "Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "Token \(harness.key)", harness.key] {
                let reply = try await call(authorization)
                Self.expectRefused(reply, 401, operation, "authorization \(authorization.map { "\($0.prefix(12))…" } ?? "none")", victim)
            }
            for key in malformed {
                Self.expectRefused(try await call("Bearer \(key)"), 401, operation, "malformed key", victim)
            }
            Self.expectRefused(try await call("Bearer \(revokedKey.text)"), 401, operation, "revoked key", victim)
            let withoutScope = try #require(lacking[scope])
            Self.expectRefused(try await call("Bearer \(withoutScope)"), 403, operation, "key without \(scope)", victim)

            // Another app's key: its own empty world, never the victim's.
            let other = try await call("Bearer \(otherAppKey)")
            let expected = Self.otherAppStatuses(operation)
            #expect(expected.contains(other.status), "\(operation) with another app's key: \(other.status) \(other.text)")
            Self.expectNoVictimData(other, operation, "another app's key", victim)
        }
        #expect(calls >= operations.count * 19)

        // Nothing any of those calls did changed the victim's session.
        let bearer = "Bearer \(harness.key)"
        let after = try await harness.call("GET", "/v1/sessions/\(victim.sessionID)?validate=never", authorization: bearer, json: nil)
        #expect(after.status == 200 && after.json["state"] as? String == "open" && after.json["active"] as? Bool == true)
        let stored = try await harness.call("GET", "/v1/sessions/\(victim.sessionID)/token", authorization: bearer, json: nil)
        #expect(stored.status == 200)
        // And the victim's own key gets what the others were refused (the matrix is not vacuous).
        for operation in operations where operation.method == "GET" {
            let own = try await harness.call(
                "GET", try Self.concretePath(operation.path, victim: victim), authorization: bearer, json: nil)
            #expect((200..<300).contains(own.status), "\(operation) with the victim's own key: \(own.status)")
        }
    }

    /// The key with its last character replaced by another one. (Replacing it with a fixed "A" gave the key itself
    /// back whenever the key ended in "A": one key in four, since the last character of 32 random bytes in
    /// base64url is one of A, Q, g, w.)
    static func withLastCharacterChanged(_ key: String) -> String {
        String(key.dropLast()) + (key.last == "A" ? "Q" : "A")
    }

    /// What another app's key may get: 404 wherever the path names this app's session, and otherwise only answers
    /// about its own (empty) data, or a refusal of the request itself.
    static func otherAppStatuses(_ operation: OpenAPISpec.SpecOperation) -> Set<Int> {
        if operation.path.contains("{id}") { return [404] }
        switch operation.operationID {
        case "setActiveSession": return [404]  // names the victim's session in its body
        case "createSession": return [422]  // the victim's token was not issued for the other app
        case "createLoginURL": return [400]  // the victim's redirect URI is not the other app's
        case "createLoginNonce": return [201]  // a nonce of its own app, for an owner of its own
        default: return [200, 204]
        }
    }

    static func expectRefused(
        _ reply: SessionHarness.Reply, _ status: Int, _ operation: OpenAPISpec.SpecOperation, _ what: String,
        _ victim: Victim
    ) {
        #expect(reply.status == status, "\(operation) with \(what): \(reply.status)")
        let error = reply.json["error"] as? [String: Any]
        #expect(
            Set(reply.json.keys) == ["error"] && error?["code"] as? String == (status == 401 ? "unauthorized" : "forbidden"),
            "\(operation) with \(what): \(reply.text)")
        if status == 401 { #expect(reply.header("WWW-Authenticate") == "Bearer", "\(operation) with \(what)") }
        expectNoVictimData(reply, operation, what, victim)
    }

    static func expectNoVictimData(
        _ reply: SessionHarness.Reply, _ operation: OpenAPISpec.SpecOperation, _ what: String, _ victim: Victim
    ) {
        let everything = reply.text + reply.headers.map { "\($0.0): \($0.1)" }.joined(separator: "\n")
        for secret in victim.secrets + [victim.owner, "victim%2Fowner%401"] where everything.contains(secret) {
            Issue.record("\(operation) with \(what) leaked victim data (\(secret.prefix(4))…)")
        }
    }

    /// The operation's path with its parameters filled with the victim's ids (percent-encoded).
    static func concretePath(_ template: String, victim: Victim) throws -> String {
        var path = template
        let values = [
            "id": victim.sessionID,
            "owner": victim.owner.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? victim.owner,
        ]
        while let open = path.firstIndex(of: "{"), let close = path[open...].firstIndex(of: "}") {
            let name = String(path[path.index(after: open)..<close])
            guard let value = values[name] else {
                throw TestSetupError("AuthorizationMatrixTests: give the path parameter {\(name)} a value")
            }
            path.replaceSubrange(open...close, with: value)
        }
        return path
    }

    /// A body that would succeed with the victim's own key (so that only the credential is wrong).
    static func body(for operationID: String, victim: Victim) -> [String: Any]? {
        switch operationID {
        case "createSession": return ["owner": victim.owner, "access_token": victim.token]
        case "createLoginURL":
            return ["owner": victim.owner, "redirect_uri": "https://shop.example/callback", "scopes": ["email"]]
        case "setActiveSession": return ["session_id": victim.sessionID]
        case "createLoginNonce": return ["owner": victim.owner]
        default: return nil
        }
    }
}

extension SessionHarness {
    /// A request with exactly the given `Authorization` header (none when nil).
    func call(_ method: String, _ path: String, authorization: String?, json: [String: Any]?) async throws
        -> SessionHarness.Reply
    {
        var headers: [(String, String)] = []
        if let authorization { headers.append(("Authorization", authorization)) }
        var body: [UInt8]?
        if let json {
            body = Array(try JSONSerialization.data(withJSONObject: json))
            headers.append(("Content-Type", "application/json"))
        }
        let response = try await client.execute(
            ClientRequest(method: method, url: "http://127.0.0.1:\(server.port)\(path)", headers: headers, body: body))
        return Reply(status: response.status, headers: response.headers, body: response.body)
    }
}
