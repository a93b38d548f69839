import Crypto
import FBSessionsAPI
import FBSessionsCore
import Foundation
import GraphEmulator
import HTTPClient
import Postgres
import Testing
import TestSupport

/// Facebook Login for Business end to end over HTTP, with the emulator's dialog and a real database: login URLs
/// with a configuration (`config_id`), the code flow granting assets, `granular_scopes` on every path a session is
/// shown, and tokens that are not a person's (system users', Pages', apps') refused with `unsupported_token_type`.
@Suite(.enabled(if: TestDatabase.isEnabled)) struct BusinessLoginTests {
    static let configID = "1234567890123456"

    /// The query parameters of a URL, in order.
    static func parameters(_ url: String) -> [(name: String, value: String)] {
        QueryString.parse(String(url.split(separator: "?", maxSplits: 1).dropFirst().first ?? "")) ?? []
    }

    static func businessURL(
        _ harness: LoginFlowHarness, owner: String, extra: [String: Any] = [:]
    ) async throws -> SessionHarness.Reply {
        var body: [String: Any] = ["owner": owner, "redirect_uri": LoginFlowHarness.redirectURI, "config_id": configID]
        body.merge(extra) { $1 }
        return try await harness.call("POST", "/v1/login-urls", json: body)
    }

    /// The `granular_scopes` of a session body, as JSON objects.
    static func granted(_ session: [String: Any]) -> [[String: Any]]? {
        (session["token"] as? [String: Any])?["granular_scopes"] as? [[String: Any]]
    }

    /// A comparable form of granular scopes: each entry as `scope` or `scope=id,id`, `target_ids` absent or not.
    static func summary(_ scopes: [[String: Any]]?) -> [String]? {
        scopes?.map { entry in
            let scope = entry["scope"] as? String ?? "?"
            guard entry.keys.contains("target_ids") else { return scope }
            return scope + "=" + ((entry["target_ids"] as? [String]) ?? ["?"]).joined(separator: ",")
        }
    }

    @Test func aLoginURLWithAConfigurationAsksForACodeWithoutScope() async throws {
        let harness = try await LoginFlowHarness()
        defer { harness.stop() }
        let made = try await Self.businessURL(harness, owner: "biz/1", extra: ["slot": 2])
        #expect(made.status == 201, "\(made.text)")
        let state = try #require(made.json["state"] as? String)
        #expect(made.json["review_required"] as? [String] == [])
        let url = try #require(made.json["url"] as? String)
        #expect(url.hasPrefix(harness.base.emulator.dialogBaseURL + "/v25.0/dialog/oauth?"))
        let pairs = Self.parameters(url)
        #expect(pairs.map(\.name) == [
            "client_id", "redirect_uri", "state", "response_type", "config_id", "override_default_response_type",
        ])
        let query = Dictionary(pairs.map { ($0.name, $0.value) }, uniquingKeysWith: { $1 })
        #expect(query["client_id"] == harness.base.facebookApp.id && query["redirect_uri"] == LoginFlowHarness.redirectURI)
        #expect(query["state"] == state && query["response_type"] == "code" && query["config_id"] == Self.configID)
        #expect(query["override_default_response_type"] == "true" && query["scope"] == nil)
        // The state remembers the configuration, with no scopes and its slot.
        let stored = try await harness.base.rows(
            "SELECT config_id, cardinality(scopes) AS n, slot FROM login_states WHERE state_hash = \(SHA256.hash(state))")
        #expect(try stored.first?.decode("config_id", as: String?.self) == Self.configID)
        #expect(try stored.first?.decode("n", as: Int.self) == 0 && stored.first?.decode("slot", as: Int?.self) == 2)

        // An auth type still reaches the dialog, after the configuration.
        let again = try await Self.businessURL(harness, owner: "biz/1", extra: ["auth_type": "reauthorize"])
        let againPairs = Self.parameters(try #require(again.json["url"] as? String))
        #expect(againPairs.map(\.name).suffix(3) == ["config_id", "override_default_response_type", "auth_type"])
        #expect(againPairs.last?.value == "reauthorize" && !againPairs.contains { $0.name == "scope" })
    }

    @Test func aConfigurationWithScopesOrMalformedIsRefusedAndStoresNothing() async throws {
        let harness = try await LoginFlowHarness()
        defer { harness.stop() }
        let refusals: [(extra: [String: Any], field: String)] = [
            (["scopes": ["email"]], "scopes"),
            (["scopes": [String]()], "scopes"),
            (["scopes": NSNull()], "scopes"),
            (["config_id": "12a4"], "config_id"),
            (["config_id": ""], "config_id"),
            (["config_id": " 123"], "config_id"),
            (["config_id": "-1"], "config_id"),
            (["config_id": String(repeating: "9", count: 33)], "config_id"),
            (["config_id": "١٢٣"], "config_id"),  // Arabic-Indic digits are not ASCII digits
            (["config_id": 1_234_567], "config_id"),
            (["config_id": ["123"]], "config_id"),
        ]
        for (extra, field) in refusals {
            let reply = try await Self.businessURL(harness, owner: "biz", extra: extra)
            let error = reply.json["error"] as? [String: Any]
            #expect(reply.status == 400 && reply.errorCode == "invalid_request", "\(extra): \(reply.text)")
            #expect(error?["field"] as? String == field, "\(extra): \(reply.text)")
        }
        #expect(try await harness.count("SELECT count(*) AS n FROM login_states") == 0)
        // The longest id allowed, and a null config_id is no configuration at all.
        let longest = try await Self.businessURL(harness, owner: "biz", extra: ["config_id": String(repeating: "9", count: 32)])
        #expect(longest.status == 201)
        let plain = try await harness.call(
            "POST", "/v1/login-urls",
            json: ["owner": "biz", "redirect_uri": LoginFlowHarness.redirectURI, "config_id": NSNull(), "scopes": ["email"]])
        #expect(plain.status == 201 && Self.parameters(plain.json["url"] as? String ?? "").contains { $0.name == "scope" })
        #expect(try await harness.count("SELECT count(*) AS n FROM login_states") == 2)
    }

    @Test func theCodeFlowWithAConfigurationStoresTheGrantedAssets() async throws {
        let harness = try await LoginFlowHarness()
        defer { harness.stop() }
        let emulator = harness.base.emulator
        try emulator.defineConfiguration(
            id: Self.configID, appID: harness.base.facebookApp.id,
            permissions: ["pages_show_list", "business_management"],
            assets: ["pages_show_list": ["20000000000000001", "20000000000000002"]])
        let ada = try emulator.createUser(firstName: "Ada", lastName: "Lovelace", email: "ada@example.com")
        let made = try await Self.businessURL(harness, owner: "biz")
        let state = try #require(made.json["state"] as? String)
        let redirect = try await harness.completeDialog(try #require(made.json["url"] as? String), as: ada.id)
        #expect(redirect.state == state)
        let login = try await harness.codeLogin(owner: "biz", code: try #require(redirect.code), state: state)
        #expect(login.status == 201, "\(login.text)")
        let expected = ["public_profile", "pages_show_list=20000000000000001,20000000000000002", "business_management"]
        #expect(Self.summary(Self.granted(login.json)) == expected, "\(login.text)")
        #expect((login.json["token"] as? [String: Any])?["permissions"] as? [String] == [
            "public_profile", "pages_show_list", "business_management",
        ])
        let id = try #require(login.json["id"] as? String)

        // Stored as debug_token gave it (target_ids left out where it left them out) ...
        let row = try await harness.base.rows("SELECT granular_scopes::text AS g FROM sessions WHERE id = \(id)")
        #expect(
            try row.first?.decode("g", as: String.self)
                == #"[{"scope": "public_profile"}, {"scope": "pages_show_list", "target_ids": ["20000000000000001", "20000000000000002"]}, {"scope": "business_management"}]"#
        )
        // ... and shown on every path: status from the cache (twice: the second from the kept body), validated
        // afresh, the owner's list, and its cached copy.
        for path in ["/v1/sessions/\(id)", "/v1/sessions/\(id)", "/v1/sessions/\(id)?validate=always",
            "/v1/sessions/\(id)?validate=never"]
        {
            let status = try await harness.call("GET", path)
            #expect(status.status == 200 && Self.summary(Self.granted(status.json)) == expected, "\(path): \(status.text)")
        }
        for _ in 0..<2 {
            let list = try await harness.call("GET", "/v1/owners/biz/sessions")
            let sessions = list.json["sessions"] as? [[String: Any]]
            #expect(sessions?.count == 1 && Self.summary(sessions.flatMap { Self.granted($0[0]) }) == expected, "\(list.text)")
        }

        // Logging out erases the assets with the token.
        let logout = try await harness.call("DELETE", "/v1/sessions/\(id)")
        #expect(logout.status == 200 && logout.json["token"] is NSNull)
        let closed = try await harness.base.rows("SELECT granular_scopes::text AS g FROM sessions WHERE id = \(id)")
        #expect(try closed.first?.decode("g", as: String.self) == "[]")
        // The table itself never lets a closed session keep assets, whoever writes (an older instance during a
        // rolling upgrade closes without knowing the column): the write goes through, the assets do not.
        _ = try await harness.base.rows(
            #"UPDATE sessions SET granular_scopes = '[{"scope": "ads_read"}]' WHERE id = \#(id)"#)
        let rewritten = try await harness.base.rows("SELECT granular_scopes::text AS g FROM sessions WHERE id = \(id)")
        #expect(try rewritten.first?.decode("g", as: String.self) == "[]")
    }

    /// A close written as the previous version writes it (state, reason and token, no word of the assets) clears
    /// them: a rolling upgrade never makes a close fail.
    @Test func aCloseThatDoesNotKnowTheAssetsStillErasesThem() async throws {
        let harness = try await LoginFlowHarness()
        defer { harness.stop() }
        let (_, token) = try harness.base.userToken()
        let login = try await harness.base.login(owner: "old", token: token)
        let id = try #require(login.json["id"] as? String)
        _ = try await harness.base.rows(
            #"UPDATE sessions SET granular_scopes = '[{"scope": "ads_read", "target_ids": ["1"]}]' WHERE id = \#(id)"#)
        _ = try await harness.base.rows(
            """
            UPDATE sessions SET state = 'closed', closed_reason = 'logged_out', closed_at = now(), token_key_id = NULL,
                token_box = NULL, profile = NULL WHERE id = \(id)
            """)
        let row = try await harness.base.rows("SELECT state, granular_scopes::text AS g FROM sessions WHERE id = \(id)")
        #expect(try row.first?.decode("state", as: String.self) == "closed")
        #expect(try row.first?.decode("g", as: String.self) == "[]")
    }

    @Test func aSystemUserConfigurationIsRefusedAtTheCodeLogin() async throws {
        let harness = try await LoginFlowHarness()
        defer { harness.stop() }
        let emulator = harness.base.emulator
        try emulator.defineConfiguration(
            id: Self.configID, appID: harness.base.facebookApp.id, permissions: ["business_management"],
            assets: ["business_management": ["30000000000000001"]], tokenKind: .systemUser)
        let ada = try emulator.createUser(name: "Ada Lovelace")
        let made = try await Self.businessURL(harness, owner: "biz")
        let state = try #require(made.json["state"] as? String)
        let redirect = try await harness.completeDialog(try #require(made.json["url"] as? String), as: ada.id)
        let code = try #require(redirect.code)
        let login = try await harness.codeLogin(owner: "biz", code: code, state: state)
        #expect(login.status == 422 && login.errorCode == "unsupported_token_type", "\(login.text)")
        #expect((login.json["error"] as? [String: Any])?["token_type"] as? String == "SYSTEM_USER")
        #expect(!login.text.contains(code))
        #expect(try await harness.count("SELECT count(*) AS n FROM sessions") == 0)
        #expect(try await harness.count("SELECT count(*) AS n FROM events") == 0)
        #expect(try await harness.count("SELECT count(*) AS n FROM owners WHERE active_session_id IS NOT NULL") == 0)
        // The state was used, as by any login that got past the code exchange.
        let again = try await harness.codeLogin(owner: "biz", code: code, state: state)
        #expect(again.status == 400 && again.errorCode == "state_used")
    }

    @Test func addingAnAccountWithASystemUsersTokenSaysUnsupportedNotAlreadyLinked() async throws {
        let harness = try await LoginFlowHarness()
        defer { harness.stop() }
        let emulator = harness.base.emulator
        try emulator.defineConfiguration(
            id: Self.configID, appID: harness.base.facebookApp.id, permissions: ["business_management"],
            tokenKind: .systemUser)
        let (ada, token) = try harness.base.userToken()
        let linked = try await harness.base.login(owner: "biz", token: token)
        #expect(linked.status == 201)
        let events = try await harness.count("SELECT count(*) AS n FROM events")
        // The reauthenticate pre-check inspects the token first: a system user's token names no account to link.
        let made = try await Self.businessURL(harness, owner: "biz", extra: ["auth_type": "reauthenticate"])
        let url = try #require(made.json["url"] as? String)
        #expect(Self.parameters(url).contains { $0.name == "auth_nonce" })
        let redirect = try await harness.completeDialog(url, as: ada.id)
        let login = try await harness.codeLogin(
            owner: "biz", code: try #require(redirect.code), state: try #require(redirect.state))
        #expect(login.status == 422 && login.errorCode == "unsupported_token_type", "\(login.text)")
        #expect((login.json["error"] as? [String: Any])?["session_id"] == nil)
        #expect(try await harness.count("SELECT count(*) AS n FROM sessions") == 1)
        #expect(try await harness.count("SELECT count(*) AS n FROM events") == events)
    }

    @Test func tokensThatAreNotAPersonsAreRefusedAndTakeNoSlot() async throws {
        let harness = try await SessionHarness(maxSlots: 1)
        defer { harness.stop() }
        let emulator = harness.emulator
        let appID = harness.facebookApp.id
        let admin = try emulator.createUser(name: "Pat Admin")
        let tokens: [(token: String, type: String)] = [
            (try emulator.issuePageToken(appID: appID, userID: admin.id, pageID: "20000000000000001").accessToken, "PAGE"),
            (try emulator.appToken(for: appID), "APP"),
            (
                try emulator.issueSystemUserToken(
                    appID: appID, userID: admin.id, assets: ["business_management": ["30000000000000001"]]
                ).accessToken, "SYSTEM_USER"
            ),
        ]
        for (token, type) in tokens {
            let reply = try await harness.login(owner: "o", token: token)
            let error = reply.json["error"] as? [String: Any]
            #expect(reply.status == 422 && reply.errorCode == "unsupported_token_type", "\(type): \(reply.text)")
            #expect(error?["token_type"] as? String == type && (error?["message"] as? String)?.contains(type) == true)
            #expect(!reply.text.contains(token) && !reply.text.contains(harness.facebookApp.secret))
        }
        #expect(try await harness.rows("SELECT count(*) AS n FROM sessions").first?.decode("n", as: Int.self) == 0)
        #expect(try await harness.rows("SELECT count(*) AS n FROM events").first?.decode("n", as: Int.self) == 0)
        // The owner's one slot is still free for a person.
        let (_, person) = try harness.userToken()
        let login = try await harness.login(owner: "o", token: person)
        #expect(login.status == 201 && login.json["slot"] as? Int == 0, "\(login.text)")
    }

    @Test func granularScopesFollowEachLoginOfTheSession() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let emulator = harness.emulator
        let (ada, plain) = try harness.userToken()
        let first = try await harness.login(owner: "o", token: plain)
        #expect(first.status == 201)
        #expect(Self.summary(Self.granted(first.json)) == ["public_profile", "email"])
        let id = try #require(first.json["id"] as? String)
        _ = try await harness.call("GET", "/v1/sessions/\(id)")  // the status is cached now

        // A later login of the same person with assets updates the session; the cached status follows.
        let withAssets = try emulator.issueToken(
            appID: harness.facebookApp.id, userID: ada.id, granted: ["public_profile", "ads_read"],
            assets: ["ads_read": ["act_40000000000000001"]]
        ).accessToken
        let second = try await harness.login(owner: "o", token: withAssets)
        #expect(second.status == 200 && second.json["id"] as? String == id)
        let expected = ["public_profile", "ads_read=act_40000000000000001"]
        #expect(Self.summary(Self.granted(second.json)) == expected, "\(second.text)")
        let status = try await harness.call("GET", "/v1/sessions/\(id)")
        #expect(Self.summary(Self.granted(status.json)) == expected, "\(status.text)")
        let list = try await harness.call("GET", "/v1/owners/o/sessions")
        #expect(Self.summary((list.json["sessions"] as? [[String: Any]]).flatMap { Self.granted($0[0]) }) == expected)
    }

    @Test func aLimitedLoginHasNoGranularScopesEvenAfterAStandardOne() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        let (fresh, session) = try await harness.loggedIn(owner: "o2")
        #expect(fresh.id == session["facebook_user_id"] as? String)
        #expect(Self.granted(session) != nil && Self.granted(session)?.isEmpty == true, "\(session)")

        // A standard login with assets, then the same person through Limited Login: the assets are gone.
        let ada = try harness.user("Ada Lovelace")
        let token = try harness.emulator.issueToken(
            appID: harness.facebookAppID, userID: ada.id, granted: ["public_profile", "pages_show_list"],
            assets: ["pages_show_list": ["20000000000000001"]]
        ).accessToken
        let standard = try await harness.call("POST", "/v1/sessions", json: ["owner": "o1", "access_token": token])
        #expect(Self.summary(Self.granted(standard.json)) == ["public_profile", "pages_show_list=20000000000000001"])
        let id = try #require(standard.json["id"] as? String)
        let limited = try await harness.login(
            owner: "o1", token: try harness.mint(ada.id, nonce: try await harness.nonce(owner: "o1")))
        #expect(limited.status == 200 && limited.json["id"] as? String == id, "\(limited.text)")
        #expect(Self.granted(limited.json)?.isEmpty == true, "\(limited.text)")
        let status = try await harness.call("GET", "/v1/sessions/\(id)")
        #expect(Self.granted(status.json)?.isEmpty == true && status.json["login_kind"] as? String == "limited")
    }
}
