import Crypto
import FBSessionsAPI
import FBSessionsCore
import Foundation
import GraphEmulator
import HTTPClient
import Postgres
import Testing
import TestSupport

/// Login URLs and the OAuth code flow with auth types, end to end over HTTP: the service, the emulator's login
/// dialog driven as a browser drives it, and a real database.
@Suite(.enabled(if: TestDatabase.isEnabled)) struct LoginFlowTests {
    @Test func theWholeCodeFlowThroughTheDialog() async throws {
        let harness = try await LoginFlowHarness()
        defer { harness.stop() }
        let ada = try harness.base.emulator.createUser(firstName: "Ada", lastName: "Lovelace", email: "ada@example.com")
        let made = try await harness.loginURL(
            owner: "user/1", scopes: ["public_profile", "email", "user_link", "user_friends", "email"])
        #expect(made.status == 201 && made.header("Cache-Control") == "no-store")
        let state = try #require(made.json["state"] as? String)
        #expect(state.utf8.count == 43 && Base64URL.decode(state)?.count == 32)
        #expect(made.json["review_required"] as? [String] == ["user_link", "user_friends"])
        let expiresAt = try #require(ISO8601DateFormatter.withFraction.date(from: made.json["expires_at"] as? String ?? ""))
        #expect(abs(expiresAt.timeIntervalSinceNow - 600) < 30)

        let url = try #require(made.json["url"] as? String)
        #expect(url.hasPrefix(harness.base.emulator.dialogBaseURL + "/v25.0/dialog/oauth?"))
        let query = Dictionary(
            (QueryString.parse(String(url.split(separator: "?")[1])) ?? []).map { ($0.name, $0.value) },
            uniquingKeysWith: { $1 })
        #expect(query["client_id"] == harness.base.facebookApp.id && query["redirect_uri"] == LoginFlowHarness.redirectURI)
        #expect(query["state"] == state && query["response_type"] == "code")
        #expect(query["scope"] == "public_profile,email,user_link,user_friends" && query["auth_type"] == nil)
        #expect(url.contains("redirect_uri=https%3A%2F%2Fshop.example%2Fcallback"))
        // Only the state's hash is stored.
        #expect(try await harness.count("SELECT count(*) AS n FROM login_states WHERE state_hash = \(SHA256.hash(state))") == 1)
        let stored = try await harness.base.rows("SELECT encode(state_hash, 'escape') AS h, owner FROM login_states")
        #expect(try stored.first?.decode("h", as: String.self).contains(state) == false)
        #expect(try stored.first?.decode("owner", as: String.self) == "user/1")

        let redirect = try await harness.completeDialog(url, as: ada.id)
        #expect(redirect.location.hasPrefix(LoginFlowHarness.redirectURI + "?") && redirect.state == state)
        let code = try #require(redirect.code)
        let login = try await harness.codeLogin(owner: "user/1", code: code, state: state)
        #expect(login.status == 201, "\(login.text)")
        #expect(login.json["facebook_user_id"] as? String == ada.id && login.json["state"] as? String == "open")
        #expect(((login.json["token"] as? [String: Any])?["permissions"] as? [String])?.contains("user_link") == true)
        #expect(!login.text.contains(code))
        let events = try await harness.base.rows("SELECT type FROM events ORDER BY id")
        #expect(try events.map { try $0.decode("type", as: String.self) } == ["session.opened", "token.changed", "session.activated"])
        #expect(harness.base.emulator.callCount(.oauthAccessToken) == 2)  // the code, then the long-lived exchange

        // A state works once.
        let again = try await harness.codeLogin(owner: "user/1", code: code, state: state)
        #expect(again.status == 400 && again.errorCode == "state_used")
        #expect(try await harness.count("SELECT count(*) AS n FROM sessions") == 1)
    }

    @Test func statesAreBoundToAppOwnerAndTime() async throws {
        let harness = try await LoginFlowHarness()
        defer { harness.stop() }
        let emulator = harness.base.emulator
        let ada = try emulator.createUser(name: "Ada L")
        func code() throws -> String {
            try emulator.authorizationCode(
                appID: harness.base.facebookApp.id, userID: ada.id, redirectURI: LoginFlowHarness.redirectURI)
        }

        // Another owner's state: refused, and left usable for its owner.
        let alices = try #require(try await harness.loginURL(owner: "alice").json["state"] as? String)
        let stolen = try await harness.codeLogin(owner: "mallory", code: try code(), state: alices)
        #expect(stolen.status == 400 && stolen.errorCode == "invalid_state")
        #expect(stolen.text.contains("another owner"))
        #expect(try await harness.codeLogin(owner: "alice", code: try code(), state: alices).status == 201)

        // Expired.
        let late = try #require(try await harness.loginURL(owner: "bob").json["state"] as? String)
        _ = try await harness.base.rows(
            "UPDATE login_states SET expires_at = now() - interval '1 second' WHERE state_hash = \(SHA256.hash(late))")
        let expired = try await harness.codeLogin(owner: "bob", code: try code(), state: late)
        #expect(expired.status == 400 && expired.errorCode == "state_expired")

        // Never issued, malformed, or another app's: all unknown.
        let other = try await harness.loginURL(
            owner: "alice", redirectURI: "https://other.example/callback", key: harness.otherKey)
        #expect(other.status == 201)
        let foreign = try #require(other.json["state"] as? String)
        for state in [foreign, SecureRandom.token(byteCount: 32), "abc", String(repeating: "A", count: 43)] {
            let reply = try await harness.codeLogin(owner: "alice", code: try code(), state: state)
            #expect(reply.status == 400 && reply.errorCode == "invalid_state", "\(state)")
        }

        // A code Facebook refuses uses the state up.
        let fresh = try #require(try await harness.loginURL(owner: "carol").json["state"] as? String)
        let refused = try await harness.codeLogin(owner: "carol", code: "AQDnot-a-real-code", state: fresh)
        #expect(refused.status == 422 && refused.errorCode == "code_rejected")
        #expect(((refused.json["error"] as? [String: Any])?["graph"] as? [String: Any])?["code"] as? Int == 100)
        #expect(try await harness.codeLogin(owner: "carol", code: try code(), state: fresh).errorCode == "state_used")

        // Graph down during the exchange: 503, and the state may be sent again.
        let retry = try #require(try await harness.loginURL(owner: "dave").json["state"] as? String)
        emulator.injectFault(.httpStatus(503), endpoint: .oauthAccessToken, count: 10)
        let down = try await harness.codeLogin(owner: "dave", code: try code(), state: retry)
        #expect(down.status == 503 && down.errorCode == "graph_unavailable")
        emulator.clearFaults()
        #expect(try await harness.codeLogin(owner: "dave", code: try code(), state: retry).status == 201)

        #expect(try await harness.count("SELECT count(*) AS n FROM sessions") == 2)
        #expect(try await harness.count("SELECT count(*) AS n FROM sessions WHERE owner IN ('mallory', 'bob', 'carol')") == 0)
    }

    @Test func redirectURIsMustMatchExactlyAndBadBodiesStoreNothing() async throws {
        let harness = try await LoginFlowHarness()
        defer { harness.stop() }
        let nearMisses = [
            "https://shop.example/Callback", "HTTPS://shop.example/callback", "https://shop.example/callback/",
            "https://shop.example/callbac", "https://shop.example/callbacks", "https://shop.example/callback?x=1",
            "http://shop.example/callback", "https://shop.example:443/callback", "https://shop.example/callb\u{0430}ck",
            "https://shop.example/callback ", " https://shop.example/callback", "https://other.example/callback",
        ]
        for uri in nearMisses {
            let reply = try await harness.loginURL(owner: "o", redirectURI: uri)
            #expect(reply.status == 400 && reply.errorCode == "redirect_uri_not_allowed", "\(uri)")
            #expect((reply.json["error"] as? [String: Any])?["field"] as? String == "redirect_uri")
        }
        let bad: [([String: Any], String)] = [
            (["owner": "o", "redirect_uri": LoginFlowHarness.redirectURI, "extra": 1], "extra"),
            (["owner": "o", "redirect_uri": LoginFlowHarness.redirectURI, "auth_type": "login"], "auth_type"),
            (["owner": "o", "redirect_uri": LoginFlowHarness.redirectURI, "auth_type": 3], "auth_type"),
            (["owner": "o", "redirect_uri": LoginFlowHarness.redirectURI, "scopes": "email"], "scopes"),
            (["owner": "o", "redirect_uri": LoginFlowHarness.redirectURI, "scopes": ["Email"]], "scopes"),
            (["owner": "o", "redirect_uri": LoginFlowHarness.redirectURI, "scopes": ["a,b"]], "scopes"),
            (["owner": "o", "redirect_uri": LoginFlowHarness.redirectURI, "slot": 8], "slot"),
            (["owner": "o", "redirect_uri": LoginFlowHarness.redirectURI, "slot": -1], "slot"),
            (["owner": "", "redirect_uri": LoginFlowHarness.redirectURI], "owner"),
            (["owner": "o"], "redirect_uri"),
            (["redirect_uri": LoginFlowHarness.redirectURI], "owner"),
        ]
        for (body, field) in bad {
            let reply = try await harness.call("POST", "/v1/login-urls", json: body)
            #expect(reply.status == 400 && reply.errorCode == "invalid_request", "\(body)")
            #expect((reply.json["error"] as? [String: Any])?["field"] as? String == field, "\(body)")
        }
        let text = try await harness.call(
            "POST", "/v1/login-urls", headers: [("Content-Type", "text/plain")])
        #expect(text.status == 400 || text.status == 415)
        let unauthenticated = try await harness.call("POST", "/v1/login-urls", json: ["owner": "o"], key: "fbs_nope")
        #expect(unauthenticated.status == 401)
        #expect(try await harness.count("SELECT count(*) AS n FROM login_states") == 0)

        // Code-login bodies that cannot be right.
        let state = try #require(try await harness.loginURL(owner: "o").json["state"] as? String)
        let wrong: [([String: Any], String)] = [
            (["owner": "o", "state": state], "code"),
            (["owner": "o", "code": "abc"], "state"),
            (["owner": "o", "code": "abc", "state": state, "access_token": "EAAx"], "access_token"),
            (["owner": "o", "code": "a b", "state": state], "code"),
            (["owner": "o", "code": 7, "state": state], "code"),
        ]
        for (body, field) in wrong {
            let reply = try await harness.call("POST", "/v1/sessions", json: body)
            #expect(reply.status == 400 && (reply.json["error"] as? [String: Any])?["field"] as? String == field, "\(body)")
        }
        #expect(try await harness.count("SELECT count(*) AS n FROM login_states WHERE used_at IS NOT NULL") == 0)
        #expect(try await harness.count("SELECT count(*) AS n FROM sessions") == 0)
    }

    @Test func authTypesReachTheDialog() async throws {
        let harness = try await LoginFlowHarness()
        defer { harness.stop() }
        for authType in AuthType.allCases {
            let url = try #require(try await harness.loginURL(owner: "o", authType: authType.rawValue).json["url"] as? String)
            #expect(url.contains("&auth_type=\(authType.rawValue)"))
            let nonce = url.firstMatch(of: #/auth_nonce=([0-9a-f]{32})(&|$)/#)
            #expect((nonce != nil) == (authType == .reauthenticate), "\(url)")
        }
        // The dialog honours rerequest: a declined permission is asked again and can be granted.
        let ada = try harness.base.emulator.createUser(name: "Ada R")
        let first = try await harness.loginURL(owner: "o", scopes: ["public_profile", "email"])
        let firstURL = try #require(first.json["url"] as? String)
        let declining = try await harness.completeDialogDeclining(firstURL, as: ada.id, decline: "email")
        let session = try await harness.codeLogin(owner: "o", code: try #require(declining.code), state: try #require(declining.state))
        #expect(session.status == 201)
        #expect(((session.json["token"] as? [String: Any])?["declined_permissions"] as? [String]) == ["email"])
        let again = try await harness.loginURL(owner: "o", scopes: ["email"], authType: "rerequest")
        let redirect = try await harness.completeDialog(try #require(again.json["url"] as? String), as: ada.id)
        let updated = try await harness.codeLogin(owner: "o", code: try #require(redirect.code), state: try #require(redirect.state))
        #expect(updated.status == 200 && updated.json["id"] as? String == session.json["id"] as? String)
        #expect(((updated.json["token"] as? [String: Any])?["permissions"] as? [String])?.contains("email") == true)
    }

    @Test func reauthenticateSaysAlreadyLinkedAndSlotsFollowTheURL() async throws {
        let harness = try await LoginFlowHarness()
        defer { harness.stop() }
        let emulator = harness.base.emulator
        let ada = try emulator.createUser(name: "Ada A")
        let bob = try emulator.createUser(name: "Bob B")
        let cid = try emulator.createUser(name: "Cid C")
        func login(_ user: EmulatedUser, authType: String? = nil, slot: Int? = nil) async throws -> SessionHarness.Reply {
            let made = try await harness.loginURL(owner: "o", authType: authType, slot: slot)
            let redirect = try await harness.completeDialog(try #require(made.json["url"] as? String), as: user.id)
            return try await harness.codeLogin(owner: "o", code: try #require(redirect.code), state: try #require(redirect.state))
        }
        let adaSession = try await login(ada)
        #expect(adaSession.status == 201 && adaSession.json["slot"] as? Int == 0)
        let eventsBefore = try await harness.count("SELECT count(*) AS n FROM events")
        let refreshedBefore = try await harness.base.rows("SELECT token_refreshed_at AS t FROM sessions").first?
            .decode("t", as: Date.self)

        // Adding an account, the person picks the one already linked: 409, nothing changes.
        let linked = try await login(ada, authType: "reauthenticate")
        #expect(linked.status == 409 && linked.errorCode == "already_linked", "\(linked.text)")
        let error = try #require(linked.json["error"] as? [String: Any])
        #expect(error["session_id"] as? String == adaSession.json["id"] as? String && error["slot"] as? Int == 0)
        #expect(try await harness.count("SELECT count(*) AS n FROM events") == eventsBefore)
        let refreshedAfter = try await harness.base.rows("SELECT token_refreshed_at AS t FROM sessions").first?
            .decode("t", as: Date.self)
        #expect(refreshedAfter == refreshedBefore)

        // Another person: a new slot.
        let bobSession = try await login(bob, authType: "reauthenticate")
        #expect(bobSession.status == 201 && bobSession.json["slot"] as? Int == 1)

        // A login URL made for a slot puts the account there; asking for another slot at login is refused and
        // leaves the state usable.
        let made = try await harness.loginURL(owner: "o", slot: 5)
        let redirect = try await harness.completeDialog(try #require(made.json["url"] as? String), as: cid.id)
        let mismatch = try await harness.codeLogin(
            owner: "o", code: try #require(redirect.code), state: try #require(redirect.state), slot: 2)
        #expect(mismatch.status == 400 && (mismatch.json["error"] as? [String: Any])?["field"] as? String == "slot")
        let placed = try await harness.codeLogin(owner: "o", code: try #require(redirect.code), state: try #require(redirect.state))
        #expect(placed.status == 201 && placed.json["slot"] as? Int == 5)
    }

    @Test func aCancelledDialogCreatesNothing() async throws {
        let harness = try await LoginFlowHarness()
        defer { harness.stop() }
        let ada = try harness.base.emulator.createUser(name: "Ada C")
        let made = try await harness.loginURL(owner: "o")
        let url = try #require(made.json["url"] as? String)
        let state = try #require(made.json["state"] as? String)
        let cancelled = try await harness.completeDialog(url, as: ada.id, action: "cancel")
        #expect(cancelled.parameters["error"] == "access_denied" && cancelled.parameters["error_reason"] == "user_denied")
        #expect(cancelled.state == state && cancelled.code == nil)
        // The documented path: the backend calls nothing. A backend that forwards the state anyway gets a 400.
        let forwarded = try await harness.call("POST", "/v1/sessions", json: ["owner": "o", "state": state])
        #expect(forwarded.status == 400 && (forwarded.json["error"] as? [String: Any])?["field"] as? String == "code")
        #expect(try await harness.count("SELECT count(*) AS n FROM sessions") == 0)
        #expect(try await harness.count("SELECT count(*) AS n FROM events") == 0)
        // The state stays unused until it expires: the person may still change their mind in the dialog.
        let approved = try await harness.completeDialog(url, as: ada.id)
        #expect(try await harness.codeLogin(owner: "o", code: try #require(approved.code), state: state).status == 201)
    }
}

extension LoginFlowHarness {
    /// Completes the dialog granting every asked permission but `decline`.
    func completeDialogDeclining(_ url: String, as userID: String, decline: String) async throws -> Redirect {
        let query = String(url.split(separator: "?", maxSplits: 1)[1])
        let pairs = (QueryString.parse(query) ?? []).filter { $0.name != "scope" }
        let scopes = (QueryString.parse(query) ?? []).first { $0.name == "scope" }?.value.split(separator: ",")
            .map(String.init) ?? []
        var form = pairs.map { ($0.name, $0.value) } + [("grants_shown", "1"), ("user_id", userID), ("action", "approve")]
        form.append(("scope", scopes.joined(separator: ",")))
        form += scopes.filter { $0 != decline }.map { ("grant", $0) }
        let body = form.map { TestForm.encode($0.0) + "=" + TestForm.encode($0.1) }.joined(separator: "&")
        let base = String(url.split(separator: "?", maxSplits: 1)[0])
        let posted = try await self.base.client.execute(
            ClientRequest(
                method: "POST", url: base, headers: [("Content-Type", "application/x-www-form-urlencoded")],
                body: Array(body.utf8)))
        let location = try #require(posted.header("Location"))
        let redirectQuery = location.split(separator: "#")[0].split(separator: "?", maxSplits: 1)[1]
        let parameters = Dictionary(
            (QueryString.parse(String(redirectQuery)) ?? []).map { ($0.name, $0.value) }, uniquingKeysWith: { $1 })
        return Redirect(location: location, parameters: parameters)
    }
}
