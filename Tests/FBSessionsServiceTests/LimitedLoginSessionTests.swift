import FBSessionsCore
import FBSessionsStorage
import Foundation
import GraphEmulator
import Postgres
import Testing
import TestSupport

/// Sessions of kind `limited`, end to end over HTTP with the emulator as Limited Login's Facebook and a real
/// database: the login and its profile, slots shared with standard logins, status without Graph, no Graph token,
/// the picture from the token, nonces raced by two instances.
@Suite(.enabled(if: TestDatabase.isEnabled)) struct LimitedLoginSessionTests {
    @Test func aLimitedLoginStoresTheTokenEncryptedWithAProfileFromTheClaims() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        let user = try harness.emulator.createUser(
            firstName: "Grace", middleName: "Brewster", lastName: "Hopper", email: "grace@example.com",
            link: "https://www.facebook.com/grace", hasPicture: true)
        let nonce = try await harness.nonce(owner: "o1")
        let minted = try harness.emulator.mintAuthenticationToken(
            AuthenticationTokenRequest(appID: harness.facebookAppID, userID: user.id, nonce: nonce))
        let reply = try await harness.login(owner: "o1", token: minted.token)
        #expect(reply.status == 201, "\(reply.text)")
        let session = reply.json
        #expect(session["login_kind"] as? String == "limited")
        #expect(session["facebook_user_id"] as? String == user.id)
        #expect(session["state"] as? String == "open" && session["active"] as? Bool == true && session["slot"] as? Int == 0)
        let profile = try #require(session["profile"] as? [String: Any])
        #expect(profile["id"] as? String == user.id && profile["name"] as? String == "Grace Brewster Hopper")
        #expect(profile["first_name"] as? String == "Grace" && profile["middle_name"] as? String == "Brewster")
        #expect(profile["last_name"] as? String == "Hopper" && profile["email"] as? String == "grace@example.com")
        #expect((profile["picture_url"] as? String)?.contains("/__cdn/platform/profilepic/") == true)
        #expect(profile["link"] is NSNull)  // user_link not granted
        let token = try #require(session["token"] as? [String: Any])
        #expect(token["permissions"] as? [String] == ["public_profile", "email"])
        let expires = try #require(ISO8601DateFormatter.withFraction.date(from: token["expires_at"] as? String ?? ""))
        #expect(abs(expires.timeIntervalSince1970 - Double(minted.expiresAt)) < 1)
        #expect(!reply.text.contains(minted.token))
        // No Graph call at all; the key set was fetched once.
        for endpoint in [GraphEndpoint.debugToken, .me, .permissions, .oauthAccessToken] {
            #expect(harness.emulator.callCount(endpoint) == 0, "\(endpoint)")
        }
        #expect(harness.emulator.callCount(.jwks) == 1)
        // Stored sealed under the session id, like any token; the nonce is used.
        let id = try #require(session["id"] as? String)
        let row = try #require(try await harness.base.rows(
            "SELECT login_kind, token_box, token_key_id FROM sessions WHERE id = \(id)").first)
        #expect(try row.decode("login_kind", as: String.self) == "limited")
        let box = try row.decode("token_box", as: [UInt8].self)
        #expect(!String(decoding: box, as: UTF8.self).contains(minted.token.prefix(20)))
        let opened = try harness.base.keyring.open(
            Keyring.Sealed(keyID: try row.decode("token_key_id"), box: box), context: id)
        #expect(String(decoding: opened, as: UTF8.self) == minted.token)
        #expect(try await harness.count("SELECT count(*)::int AS n FROM login_nonces WHERE used_at IS NOT NULL") == 1)
        // Events: opened, token.changed (login_kind limited), activated.
        let events = try await harness.base.rows(
            "SELECT type, data->>'user_changed' AS changed, data->>'login_kind' AS kind FROM events ORDER BY id")
        #expect(try events.map { try $0.decode("type", as: String.self) } == [
            "session.opened", "token.changed", "session.activated",
        ])
        #expect(try events[1].decode("kind", as: String?.self) == "limited")
    }

    @Test func theSamePersonKeepsOneSlotWhicheverWayTheyLogIn() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        let (ada, standardToken) = try harness.base.userToken()
        let standard = try await harness.call(
            "POST", "/v1/sessions", json: ["owner": "o1", "access_token": standardToken])
        #expect(standard.status == 201 && standard.json["login_kind"] as? String == "standard")
        let id = try #require(standard.json["id"] as? String)
        // Ada logs in again with Limited Login: the same session, updated; user_changed false.
        let limited = try await harness.login(
            owner: "o1", token: try harness.mint(ada.id, nonce: try await harness.nonce(owner: "o1")))
        #expect(limited.status == 200, "\(limited.text)")
        #expect(limited.json["id"] as? String == id && limited.json["slot"] as? Int == 0)
        #expect(limited.json["login_kind"] as? String == "limited")
        // And back with a Graph token.
        let back = try await harness.call("POST", "/v1/sessions", json: ["owner": "o1", "access_token": standardToken])
        #expect(back.status == 200 && back.json["id"] as? String == id && back.json["login_kind"] as? String == "standard")
        let changes = try await harness.base.rows(
            """
            SELECT data->>'user_changed' AS changed, data->>'login_kind' AS kind FROM events
            WHERE type = 'token.changed' AND session_id = \(id) ORDER BY id
            """)
        #expect(try changes.map { try $0.decode("changed", as: String.self) } == ["true", "false", "false"])
        #expect(try changes.map { try $0.decode("kind", as: String.self) } == ["standard", "limited", "standard"])
        // Another person takes the next slot; a limited login into Ada's slot replaces her.
        let bob = try harness.user("Bob Byte")
        let second = try await harness.login(owner: "o1", token: try harness.mint(bob.id, nonce: try await harness.nonce(owner: "o1")))
        #expect(second.status == 201 && second.json["slot"] as? Int == 1)
        let carol = try harness.user("Carol Code")
        let replacing = try await harness.login(
            owner: "o1", token: try harness.mint(carol.id, nonce: try await harness.nonce(owner: "o1")), slot: 0)
        #expect(replacing.status == 201 && replacing.json["slot"] as? Int == 0)
        let replaced = try await harness.call("GET", "/v1/sessions/\(id)")
        #expect(replaced.json["state"] as? String == "closed" && replaced.json["closed_reason"] as? String == "replaced")
        let handover = try #require(try await harness.base.rows(
            """
            SELECT data->>'user_changed' AS changed, data->>'previous_session_id' AS previous FROM events
            WHERE type = 'token.changed' AND session_id = \(replacing.json["id"] as? String ?? "")
            """).first)
        #expect(try handover.decode("changed", as: String.self) == "true")
        #expect(try handover.decode("previous", as: String?.self) == id)
    }

    @Test func theNoncesSlotAppliesUnlessTheLoginNamesOne() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        let first = try await harness.login(
            owner: "o1", token: try harness.mint(try harness.user().id, nonce: try await harness.nonce(owner: "o1", slot: 5)))
        #expect(first.status == 201 && first.json["slot"] as? Int == 5)
        let second = try await harness.login(
            owner: "o1", token: try harness.mint(try harness.user("Bo Bit").id, nonce: try await harness.nonce(owner: "o1", slot: 5)),
            slot: 2)
        #expect(second.status == 201 && second.json["slot"] as? Int == 2)
    }

    @Test func statusNeverCallsGraphAndTheTokenIsNotRevealed() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        let (_, session) = try await harness.loggedIn(owner: "o1")
        let id = try #require(session["id"] as? String)
        harness.emulator.resetCounters()
        for mode in ["auto", "always", "never"] {
            let status = try await harness.call("GET", "/v1/sessions/\(id)?validate=\(mode)")
            #expect(status.status == 200 && status.json["validation"] as? String == "cached", "\(mode)")
            #expect(status.json["state"] as? String == "open" && status.json["login_kind"] as? String == "limited")
        }
        let list = try await harness.call("GET", "/v1/owners/o1/sessions")
        #expect((list.json["sessions"] as? [[String: Any]])?.first?["login_kind"] as? String == "limited")
        #expect(harness.emulator.callCounts.values.reduce(0, +) == 0)
        let token = try await harness.call("GET", "/v1/sessions/\(id)/token")
        #expect(token.status == 409 && token.errorCode == "no_graph_token")
        // The sweep leaves it alone too, even when it is long unvalidated.
        _ = try await harness.base.rows("UPDATE sessions SET validated_at = now() - interval '30 days' WHERE id = \(id)")
        let report = try await Sweeper(service: harness.sessions, store: harness.base.store).pass()
        #expect(report.validated == 0 && report.closed == 0 && report.deferred == 0)
        #expect(harness.emulator.callCounts.values.reduce(0, +) == 0)
        let after = try await harness.call("GET", "/v1/sessions/\(id)?validate=always")
        #expect(after.json["state"] as? String == "open")
        // Closed, the token answer is 410 like any closed session.
        _ = try await harness.call("DELETE", "/v1/sessions/\(id)")
        #expect(try await harness.call("GET", "/v1/sessions/\(id)/token").status == 410)
    }

    @Test func thePictureComesFromTheTokensPictureClaimAndOutlivesItsURL() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        let user = try harness.user()
        let token = try harness.mint(user.id, nonce: try await harness.nonce(owner: "o1")) { $0.pictureExpiresIn = 2 }
        let login = try await harness.login(owner: "o1", token: token)
        let id = try #require(login.json["id"] as? String)
        harness.emulator.resetCounters()
        let first = try await harness.call("GET", "/v1/sessions/\(id)/picture")
        #expect(first.status == 200 && first.header("Content-Type") == "image/png" && !first.body.isEmpty)
        #expect(harness.emulator.callCount(.picture) == 0 && harness.emulator.callCount(.cdn) == 1)
        // Any size is the one picture the token named: no further fetch while it is fresh.
        let description = try await harness.call("GET", "/v1/sessions/\(id)/picture/description?type=large")
        #expect(description.status == 200 && description.json["width"] as? Int == 100)
        #expect((description.json["url"] as? String) == (login.json["profile"] as? [String: Any])?["picture_url"] as? String)
        // Past the URL's expiry, the cached copy keeps being served (stale), with no call to the CDN.
        try await Task.sleep(nanoseconds: 2_500_000_000)
        let later = try await harness.call("GET", "/v1/sessions/\(id)/picture?type=small")
        #expect(later.status == 200 && later.body == first.body, "\(later.status) \(later.text.prefix(200))")
        #expect(later.header("Warning")?.contains("110") == true)
        #expect(harness.emulator.callCount(.cdn) == 1 && harness.emulator.callCount(.picture) == 0)
        // The JSON description would be a dead URL: 404 picture_not_cached.
        let dead = try await harness.call("GET", "/v1/sessions/\(id)/picture/description")
        #expect(dead.status == 404 && dead.errorCode == "picture_not_cached")
        // Logout erases the copy.
        _ = try await harness.call("DELETE", "/v1/sessions/\(id)")
        #expect(try await harness.count("SELECT count(*)::int AS n FROM picture_cache") == 0)
    }

    @Test func withNothingCachedAnExpiredOrMissingPictureIsNotCached() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        let expiring = try await harness.login(
            owner: "o1", token: try harness.mint(try harness.user().id, nonce: try await harness.nonce(owner: "o1")) {
                $0.pictureExpiresIn = 1
            })
        let missing = try await harness.login(
            owner: "o1", token: try harness.mint(try harness.user("Nemo N").id, nonce: try await harness.nonce(owner: "o1")) {
                $0.omittedClaims = ["picture"]
            })
        try await Task.sleep(nanoseconds: 1_500_000_000)
        harness.emulator.resetCounters()
        let expired = try await harness.call("GET", "/v1/sessions/\(expiring.json["id"] as? String ?? "")/picture")
        #expect(expired.status == 404 && expired.errorCode == "picture_not_cached")
        #expect((expired.json["error"] as? [String: Any])?["reason"] as? String == "url_expired")
        let none = try await harness.call("GET", "/v1/sessions/\(missing.json["id"] as? String ?? "")/picture")
        #expect(none.status == 404 && (none.json["error"] as? [String: Any])?["reason"] as? String == "no_picture")
        #expect(harness.emulator.callCount(.cdn) == 0 && harness.emulator.callCount(.picture) == 0)
    }

    @Test func twoInstancesRacingOneNonceLetExactlyOneLoginWin() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        let second = try await LimitedLoginSecondInstance(harness)
        defer { second.stop() }
        for round in 0..<8 {
            let user = try harness.user("Racer \(round)")
            let nonce = try await harness.nonce(owner: "racer-\(round)")
            // Two tokens with the one nonce (as a replayed SDK answer would be), one to each instance at once.
            let tokens = [try harness.mint(user.id, nonce: nonce), try harness.mint(user.id, nonce: nonce)]
            async let a = harness.login(owner: "racer-\(round)", token: tokens[0])
            async let b = second.login(owner: "racer-\(round)", token: tokens[1])
            let replies = try await [a, b]
            let statuses = replies.map(\.status).sorted()
            #expect(statuses == [201, 400], "round \(round): \(replies.map(\.text))")
            #expect(replies.contains { $0.errorCode == "nonce_used" }, "round \(round)")
            #expect(
                try await harness.count(
                    "SELECT count(*)::int AS n FROM sessions WHERE owner = \("racer-\(round)")") == 1)
        }
    }

    @Test func deauthorizeAndDataDeletionCloseAndEraseLimitedSessions() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        let (user, first) = try await harness.loggedIn(owner: "o1")
        let (_, second) = try await harness.loggedIn(owner: "o2", user: user)
        let firstID = try #require(first["id"] as? String)
        #expect(try await harness.call("GET", "/v1/sessions/\(firstID)/picture").status == 200)
        let secret = harness.base.facebookApp.secret
        let deauthorized = try await harness.callback(
            "/v1/facebook/deauthorize",
            signedRequest: LoginFlowHarness.sign(LoginFlowHarness.payload(userID: user.id), secret: secret))
        #expect(deauthorized.status == 200 && deauthorized.json["sessions_closed"] as? Int == 2, "\(deauthorized.text)")
        for id in [firstID, second["id"] as? String ?? ""] {
            let status = try await harness.call("GET", "/v1/sessions/\(id)")
            #expect(status.json["closed_reason"] as? String == "app_removed" && status.json["token"] is NSNull)
        }
        #expect(try await harness.count("SELECT count(*)::int AS n FROM sessions WHERE token_box IS NOT NULL") == 0)
        #expect(try await harness.count("SELECT count(*)::int AS n FROM picture_cache") == 0)
        // Data deletion of another limited user: closed with data_deletion, profile and token erased.
        let (other, third) = try await harness.loggedIn(owner: "o3")
        let deleted = try await harness.callback(
            "/v1/facebook/data-deletion",
            signedRequest: LoginFlowHarness.sign(LoginFlowHarness.payload(userID: other.id), secret: secret))
        #expect(deleted.status == 200 && deleted.json["confirmation_code"] is String)
        let status = try await harness.call("GET", "/v1/sessions/\(third["id"] as? String ?? "")")
        #expect(status.json["closed_reason"] as? String == "data_deletion" && status.json["profile"] is NSNull)
    }
}
