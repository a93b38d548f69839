import FBSessionsCore
import Foundation
import GraphEmulator
import Postgres
import Testing
import TestSupport

/// Login, status, logout, slots and the token reveal, end to end over HTTP with the Graph emulator and a real
/// database.
@Suite(.enabled(if: TestDatabase.isEnabled)) struct SessionFlowTests {
    @Test func loginStoresALongLivedTokenAndReloginKeepsTheSession() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let (_, token) = try harness.userToken()
        let first = try await harness.login(owner: "user-1", token: token)
        #expect(first.status == 201)
        let session = first.json
        #expect(session["state"] as? String == "open" && session["validation"] as? String == "fresh")
        #expect(session["slot"] as? Int == 0 && session["active"] as? Bool == true)
        #expect((session["profile"] as? [String: Any])?["name"] as? String == "Ada Lovelace")
        #expect(!first.text.contains(token))
        let tokenInfo = try #require(session["token"] as? [String: Any])
        #expect((tokenInfo["permissions"] as? [String])?.contains("email") == true)
        // The short-lived token was exchanged for one of about 60 days.
        let expires = try #require(ISO8601DateFormatter.withFraction.date(from: tokenInfo["expires_at"] as? String ?? ""))
        #expect(expires.timeIntervalSinceNow > 50 * 86_400)
        // All four Graph calls happened, once each.
        for endpoint in [GraphEndpoint.debugToken, .me, .permissions, .oauthAccessToken] {
            #expect(harness.emulator.callCount(endpoint) == 1, "\(endpoint)")
        }
        let again = try await harness.login(owner: "user-1", token: token)
        #expect(again.status == 200 && again.json["id"] as? String == session["id"] as? String)
        let events = try await harness.rows("SELECT type, data->>'user_changed' AS data FROM events ORDER BY id")
        #expect(try events.map { try $0.decode("type", as: String.self) } == [
            "session.opened", "token.changed", "session.activated", "token.changed",
        ])
        #expect(try events.last?.decode("data", as: String.self) == "false")
    }

    @Test func slotsFillReplaceAndRunOut() async throws {
        let harness = try await SessionHarness(maxSlots: 2)
        defer { harness.stop() }
        let a = try harness.userToken(name: "Ann A")
        let b = try harness.userToken(name: "Bob B")
        let c = try harness.userToken(name: "Cid C")
        let sessionA = try await harness.login(owner: "o", token: a.token).json
        let sessionB = try await harness.login(owner: "o", token: b.token, activate: false).json
        #expect(sessionA["slot"] as? Int == 0 && sessionB["slot"] as? Int == 1 && sessionB["active"] as? Bool == false)
        let full = try await harness.login(owner: "o", token: c.token)
        #expect(full.status == 409 && full.errorCode == "slots_full")
        // Asking for slot 0 replaces A, which was active: the new session becomes active (activate defaults to true).
        let replacing = try await harness.login(owner: "o", token: c.token, slot: 0)
        #expect(replacing.status == 201 && replacing.json["slot"] as? Int == 0)
        let idA = try #require(sessionA["id"] as? String)
        let closedA = try await harness.call("GET", "/v1/sessions/\(idA)").json
        #expect(closedA["state"] as? String == "closed" && closedA["closed_reason"] as? String == "replaced")
        #expect(closedA["token"] is NSNull && closedA["profile"] is NSNull && closedA["action_required"] as? String == "login")
        let changed = try await harness.rows(
            """
            SELECT data->>'previous_session_id' AS previous, data->>'user_changed' AS changed FROM events
            WHERE type = 'token.changed' AND session_id = \(replacing.json["id"] as? String ?? "")
            """)
        #expect(try changed.first?.decode("previous", as: String.self) == idA)
        #expect(try changed.first?.decode("changed", as: String.self) == "true")
        // The same Facebook user keeps its slot even when another slot is asked for.
        let bAgain = try await harness.login(owner: "o", token: b.token, slot: 0)
        #expect(bAgain.status == 200 && bAgain.json["slot"] as? Int == 1)
        let list = try await harness.call("GET", "/v1/owners/o/sessions").json
        #expect((list["sessions"] as? [[String: Any]])?.map { $0["slot"] as? Int } == [0, 1])
        #expect(list["active_session_id"] as? String == bAgain.json["id"] as? String)
    }

    @Test func rejectedTokensAnswer422AndStoreNothing() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let other = try harness.emulator.registerApp()
        let user = try harness.emulator.createUser(name: "Eve E")
        let foreign = try harness.emulator.issueToken(appID: other.id, userID: user.id).accessToken
        let mismatch = try await harness.login(owner: "o", token: foreign)
        #expect(mismatch.status == 422 && mismatch.errorCode == "token_app_mismatch")
        let (_, changed) = try harness.userToken()
        try harness.emulator.invalidateToken(changed, reason: .passwordChanged)
        let rejected = try await harness.login(owner: "o", token: changed)
        #expect(rejected.status == 422 && rejected.errorCode == "token_rejected")
        #expect(((rejected.json["error"] as? [String: Any])?["graph"] as? [String: Any])?["subcode"] as? Int == 460)
        let garbage = try await harness.login(owner: "o", token: "EAAgarbage")
        #expect(garbage.status == 422)
        // This app's own app token, and a Page token: valid and this app's, but not user tokens. The caller can fix
        // that (and a retry would not help): 422 with Graph's detail, never a 502 that looks like an outage.
        let appToken = try harness.emulator.appToken(for: harness.facebookApp.id)
        let app = try await harness.login(owner: "o", token: appToken)
        #expect(app.status == 422 && app.errorCode == "unsupported_token_type", "\(app.text)")
        #expect(((app.json["error"] as? [String: Any])?["graph"] as? [String: Any])?["code"] as? Int == 2500)
        #expect(!app.text.contains(appToken) && !app.text.contains(harness.facebookApp.secret))
        let page = try harness.emulator.issuePageToken(
            appID: harness.facebookApp.id, userID: user.id, pageID: "20000000000000001").accessToken
        let pageLogin = try await harness.login(owner: "o", token: page)
        #expect(pageLogin.status == 422 && pageLogin.errorCode == "unsupported_token_type", "\(pageLogin.text)")
        #expect(try await harness.rows("SELECT count(*) AS n FROM sessions").first?.decode("n", as: Int.self) == 0)
        #expect(try await harness.rows("SELECT count(*) AS n FROM events").first?.decode("n", as: Int.self) == 0)
    }

    @Test func graphOutageAtLoginIs503AndStoresNothing() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let (_, token) = try harness.userToken()
        harness.emulator.injectFault(.httpStatus(500), endpoint: .debugToken, count: 10)
        let reply = try await harness.login(owner: "o", token: token)
        #expect(reply.status == 503 && reply.errorCode == "graph_unavailable" && reply.header("Retry-After") != nil)
        #expect(try await harness.rows("SELECT count(*) AS n FROM sessions").first?.decode("n", as: Int.self) == 0)
    }

    @Test func statusValidatesAsAskedAndClosesDeadTokens() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let (user, token) = try harness.userToken()
        let id = try #require(try await harness.login(owner: "o", token: token).json["id"] as? String)
        let meCalls = harness.emulator.callCount(.me)
        let cached = try await harness.call("GET", "/v1/sessions/\(id)").json
        #expect(cached["validation"] as? String == "cached" && cached["state"] as? String == "open")
        #expect(harness.emulator.callCount(.me) == meCalls)
        let fresh = try await harness.call("GET", "/v1/sessions/\(id)?validate=always").json
        #expect(fresh["validation"] as? String == "fresh")
        #expect(harness.emulator.callCount(.me) == meCalls + 1)

        // A profile change is stored and announced.
        _ = try harness.emulator.updateUser(user.id) { $0.name = "Ada King" }
        let renamed = try await harness.call("GET", "/v1/sessions/\(id)?validate=always").json
        #expect((renamed["profile"] as? [String: Any])?["name"] as? String == "Ada King")
        let profileEvents = try await harness.rows("SELECT data::text AS d FROM events WHERE type = 'profile.changed'")
        #expect(try profileEvents.first?.decode("d", as: String.self).contains("name") == true)

        // Transient trouble defers; it never closes.
        harness.emulator.injectFault(.httpStatus(500), endpoint: .me, count: 10)
        let deferred = try await harness.call("GET", "/v1/sessions/\(id)?validate=always").json
        #expect(deferred["validation"] as? String == "deferred" && deferred["state"] as? String != "closed")
        harness.emulator.clearFaults()

        // The stored token is the long-lived one; kill it at Facebook and the next validation closes the session.
        let stored = try #require(try await harness.call("GET", "/v1/sessions/\(id)/token").json["access_token"] as? String)
        try harness.emulator.invalidateToken(stored, reason: .expired)
        let closed = try await harness.call("GET", "/v1/sessions/\(id)?validate=always").json
        #expect(closed["state"] as? String == "closed" && closed["closed_reason"] as? String == "token_expired")
        let row = try await harness.rows("SELECT token_box IS NULL AND profile IS NULL AS erased FROM sessions WHERE id = \(id)")
        #expect(try row.first?.decode("erased", as: Bool.self) == true)
        let gone = try await harness.call("GET", "/v1/sessions/\(id)/token")
        #expect(gone.status == 410 && gone.errorCode == "session_closed")
    }

    @Test func dataAccessExpiryKeepsTheSessionAndAsksForReauthorization() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let (_, token) = try harness.userToken()
        let id = try #require(try await harness.login(owner: "o", token: token).json["id"] as? String)
        let stored = try #require(try await harness.call("GET", "/v1/sessions/\(id)/token").json["access_token"] as? String)
        try harness.emulator.invalidateToken(stored, reason: .dataAccessExpired)
        let status = try await harness.call("GET", "/v1/sessions/\(id)?validate=always").json
        #expect(status["state"] as? String == "token_loaded" && status["action_required"] as? String == "reauthorize")
    }

    @Test func declinedRequiredPermissionsAskForRerequest() async throws {
        let harness = try await SessionHarness(requiredPermissions: ["email"])
        defer { harness.stop() }
        let (_, token) = try harness.userToken(granted: ["public_profile"], declined: ["email"])
        let session = try await harness.login(owner: "o", token: token).json
        #expect(session["action_required"] as? String == "rerequest")
    }

    @Test func concurrentStatusRequestsMakeOneGraphCallAcrossInstances() async throws {
        let harness = try await SessionHarness(validateTTL: 1)
        defer { harness.stop() }
        let (_, token) = try harness.userToken()
        let id = try #require(try await harness.login(owner: "o", token: token).json["id"] as? String)
        try await Task.sleep(nanoseconds: 1_200_000_000)
        harness.emulator.setLatency(.milliseconds(300), for: .me)
        let second = try await SecondInstance(harness)
        defer { second.stop() }
        let before = harness.emulator.callCount(.me)
        let validations = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<40 {
                group.addTask {
                    let reply = index % 2 == 0
                        ? try await harness.call("GET", "/v1/sessions/\(id)")
                        : try await second.call("GET", "/v1/sessions/\(id)")
                    return reply.json["validation"] as? String ?? "?"
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(harness.emulator.callCount(.me) - before == 1)
        #expect(validations.allSatisfy { $0 == "fresh" || $0 == "cached" })
    }

    /// Regression (tools/chaos graph-outage): a request following another's validation waited out the whole
    /// follow limit (graph timeout + 2 s) when that validation was deferred, because a deferred result leaves the
    /// row as it was. Now it answers `deferred` as soon as the other attempt gives up.
    @Test func followersOfADeferredValidationAnswerWhenItEnds() async throws {
        let harness = try await SessionHarness(validateTTL: 1)
        defer { harness.stop() }
        let (_, token) = try harness.userToken()
        let id = try #require(try await harness.login(owner: "o", token: token).json["id"] as? String)
        harness.emulator.setLatency(.milliseconds(400), for: .me)
        harness.emulator.injectFault(.httpStatus(500), endpoint: .me, count: 1000)
        let second = try await SecondInstance(harness)
        defer { second.stop() }
        let started = Date()
        let answers = try await withThrowingTaskGroup(of: (String, Double).self) { group in
            for index in 0..<6 {
                group.addTask {
                    // Each instance single-flights its own requests; the other instance follows through the lease.
                    let reply = index % 2 == 0
                        ? try await harness.call("GET", "/v1/sessions/\(id)?validate=always")
                        : try await second.call("GET", "/v1/sessions/\(id)?validate=always")
                    return (reply.json["validation"] as? String ?? "?", Date().timeIntervalSince(started))
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.allSatisfy { $0.0 == "deferred" })
        // The harness's graph timeout is 3 s: followers used to answer after 5 s.
        #expect(answers.map(\.1).max() ?? 99 < 3.5, "slowest follower: \(answers.map(\.1).max() ?? 0) s")
    }

    /// Logins, single logouts and "log out everyone" of one owner, all at once: every answer is 2xx (the soak
    /// found logins and logout-all deadlocking, 500), and the owner ends with at most one live session per slot.
    @Test func concurrentLoginsAndLogoutsOfOneOwnerNeverFail() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let accounts = try (0..<4).map { index in try harness.userToken(name: "User \(index)").token }
        var statuses: [Int] = []
        for _ in 0..<6 {
            let round = try await withThrowingTaskGroup(of: Int.self) { group in
                for (index, token) in accounts.enumerated() {
                    group.addTask { try await harness.login(owner: "crowded", token: token, slot: index % 2).status }
                    group.addTask { try await harness.call("DELETE", "/v1/owners/crowded/sessions").status }
                }
                let list = try await harness.call("GET", "/v1/owners/crowded/sessions").json
                for case let session as [String: Any] in list["sessions"] as? [Any] ?? [] {
                    if let id = session["id"] as? String {
                        group.addTask { try await harness.call("DELETE", "/v1/sessions/\(id)").status }
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            statuses += round
        }
        #expect(statuses.allSatisfy { (200..<300).contains($0) }, "statuses: \(statuses.filter { $0 >= 300 })")
        let slots = try await harness.rows(
            "SELECT slot, count(*) AS n FROM sessions WHERE owner = 'crowded' AND state <> 'closed' GROUP BY slot")
        #expect(try slots.allSatisfy { try $0.decode("n", as: Int.self) == 1 })
    }

    @Test func logoutIsIdempotentAndRevokesWhenAsked() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let (user, token) = try harness.userToken()
        let id = try #require(try await harness.login(owner: "o", token: token).json["id"] as? String)
        for malformed in ["revoke=", "revoke=1", "revoke=yes"] {
            let refused = try await harness.call("DELETE", "/v1/sessions/\(id)?\(malformed)")
            #expect(refused.status == 400 && refused.errorCode == "invalid_request", "\(malformed) is not a boolean")
        }
        let out = try await harness.call("DELETE", "/v1/sessions/\(id)?revoke=true")
        #expect(out.status == 200 && out.json["closed_reason"] as? String == "logged_out")
        #expect(out.json["revocation"] as? String == "done")
        let issued = harness.emulator.token(token)
        #expect(issued?.invalidation != nil, "revoking all permissions invalidates every token of \(user.id)")
        let again = try await harness.call("DELETE", "/v1/sessions/\(id)")
        #expect(again.status == 200 && again.json["state"] as? String == "closed" && again.json["revocation"] == nil)
        // Facebook confirmed the revocation at the first logout: a repeat says done again, without calling Graph.
        let calls = harness.emulator.callCount(.permissions)
        let repeated = try await harness.call("DELETE", "/v1/sessions/\(id)?revoke=true")
        #expect(repeated.status == 200 && repeated.json["revocation"] as? String == "done")
        #expect(harness.emulator.callCount(.permissions) == calls)
        let list = try await harness.call("GET", "/v1/owners/o/sessions").json
        #expect((list["sessions"] as? [Any])?.isEmpty == true && list["active_session_id"] is NSNull)
        let missing = try await harness.call("DELETE", "/v1/sessions/ses_AAAAAAAAAAAAAAAAAAAAAA")
        #expect(missing.status == 404 && missing.errorCode == "session_not_found")
    }

    @Test func revocationWhileGraphIsDownStaysPending() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let (_, token) = try harness.userToken()
        let id = try #require(try await harness.login(owner: "o", token: token).json["id"] as? String)
        harness.emulator.injectFault(.httpStatus(500), endpoint: .permissions, count: 10)
        let out = try await harness.call("DELETE", "/v1/sessions/\(id)?revoke=true")
        #expect(out.status == 200 && out.json["state"] as? String == "closed" && out.json["revocation"] as? String == "pending")
        #expect(try await harness.rows("SELECT count(*) AS n FROM pending_revocations").first?.decode("n", as: Int.self) == 1)
    }

    @Test func activeSwitchAndLogoutAll() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let owner = "a/b@c"
        let encoded = "a%2Fb%40c"
        let first = try await harness.login(owner: owner, token: try harness.userToken(name: "Ann A").token).json
        let second = try await harness.login(owner: owner, token: try harness.userToken(name: "Bob B").token, activate: false).json
        let switched = try await harness.call("PUT", "/v1/owners/\(encoded)/active", json: ["session_id": second["id"] ?? ""])
        #expect(switched.status == 200 && switched.json["active_session_id"] as? String == second["id"] as? String)
        #expect(first["owner"] as? String == owner)
        let all = try await harness.call("DELETE", "/v1/owners/\(encoded)/sessions")
        #expect((all.json["sessions"] as? [Any])?.count == 2)
        let activateClosed = try await harness.call("PUT", "/v1/owners/\(encoded)/active", json: ["session_id": second["id"] ?? ""])
        #expect(activateClosed.status == 410)
    }

    @Test func tokenRevealNeedsItsScopeAndGivesTheProof() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let (_, token) = try harness.userToken()
        let id = try #require(try await harness.login(owner: "o", token: token).json["id"] as? String)
        let denied = try await harness.call("GET", "/v1/sessions/\(id)/token", key: harness.sessionsKey)
        #expect(denied.status == 403)
        let reveal = try await harness.call("GET", "/v1/sessions/\(id)/token")
        let stored = try #require(reveal.json["access_token"] as? String)
        #expect(reveal.header("Cache-Control") == "no-store")
        let credentials = GraphCredentials(appID: harness.facebookApp.id, appSecret: harness.facebookApp.secret)
        #expect(reveal.json["appsecret_proof"] as? String == credentials.appSecretProof(for: stored))
        #expect(harness.emulator.token(stored)?.invalidation == nil)
    }

    @Test func anotherAppsSessionsAreNotFound() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let id = try #require(try await harness.login(owner: "o", token: try harness.userToken().token).json["id"] as? String)
        let otherApp = try await PostgresAppStoreFactory.otherAppKey(harness)
        for (method, path) in [("GET", "/v1/sessions/\(id)"), ("DELETE", "/v1/sessions/\(id)"), ("GET", "/v1/sessions/\(id)/token")] {
            let reply = try await harness.call(method, path, key: otherApp)
            #expect(reply.status == 404 && reply.errorCode == "session_not_found", "\(method) \(path)")
        }
        #expect(try await harness.call("GET", "/v1/sessions/\(id)").json["state"] as? String == "open")
    }

    @Test func badInputIs400AndStoresNothing() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let (_, token) = try harness.userToken()
        let cases: [(Any?, String?, String)] = [
            (["owner": "", "access_token": token], nil, "owner"),
            (["owner": String(repeating: "x", count: 129), "access_token": token], nil, "owner"),
            (["owner": 42, "access_token": token], nil, "owner"),
            (["owner": "o", "access_token": token, "slot": -1], nil, "slot"),
            (["owner": "o", "access_token": token, "slot": 8], nil, "slot"),
            (["owner": "o", "access_token": token, "slot": "1"], nil, "slot"),
            (["owner": "o", "access_token": token, "colour": "red"], nil, "colour"),
            (["owner": "o", "access_token": String(repeating: "A", count: 5000)], nil, "access_token"),
            (["owner": "o"], nil, "access_token"),
            (nil, #"{"owner": "o", "access_token": "#, ""),
        ]
        for (json, _, field) in cases {
            let reply = json == nil
                ? try await harness.call("POST", "/v1/sessions", rawBody: #"{"owner": "o", "access_token": "#)
                : try await harness.call("POST", "/v1/sessions", json: json)
            #expect(reply.status == 400 && reply.errorCode == "invalid_request", "\(field): \(reply.text)")
            if !field.isEmpty { #expect((reply.json["error"] as? [String: Any])?["field"] as? String == field) }
        }
        // A path id that cannot be a session id names no session: 404 on every session route, as an unknown id.
        for id in ["nope", "ses_", "0", "not-an-id", "ses_short"] {
            for (method, path) in [
                ("GET", "/v1/sessions/\(id)"), ("DELETE", "/v1/sessions/\(id)"), ("DELETE", "/v1/sessions/\(id)?revoke=true"),
                ("GET", "/v1/sessions/\(id)/token"), ("GET", "/v1/sessions/\(id)?validate=always"),
            ] {
                let reply = try await harness.call(method, path)
                #expect(reply.status == 404 && reply.errorCode == "session_not_found", "\(method) \(path): \(reply.text)")
            }
        }
        // In a body, a malformed session id is still a bad field.
        let activate = try await harness.call("PUT", "/v1/owners/o/active", json: ["session_id": "nope"])
        #expect(activate.status == 400 && (activate.json["error"] as? [String: Any])?["field"] as? String == "session_id")
        #expect(try await harness.call("GET", "/v1/sessions/ses_AAAAAAAAAAAAAAAAAAAAAA?validate=sometimes").status == 400)
        #expect(try await harness.rows("SELECT count(*) AS n FROM sessions").first?.decode("n", as: Int.self) == 0)
        // SQL-looking owners are data.
        let sneaky = "x'; DROP TABLE sessions; --"
        let stored = try await harness.login(owner: sneaky, token: token)
        #expect(stored.status == 201 && stored.json["owner"] as? String == sneaky)
    }

    @Test func aDatabaseDumpHoldsNoTokenInClear() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let (_, token) = try harness.userToken()
        let id = try #require(try await harness.login(owner: "o", token: token).json["id"] as? String)
        let stored = try #require(try await harness.call("GET", "/v1/sessions/\(id)/token").json["access_token"] as? String)
        let url = harness.databaseURL
        let dump = try await onThread { try PGDump.run(url) }
        #expect(dump.contains("CREATE TABLE public.sessions"))
        #expect(!dump.contains(stored) && !dump.contains(token) && !dump.contains(harness.facebookApp.secret))
    }
}

extension ISO8601DateFormatter {
    nonisolated(unsafe) static let withFraction: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()
}
