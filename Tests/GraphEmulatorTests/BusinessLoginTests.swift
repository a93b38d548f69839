import Testing

@testable import GraphEmulator

/// Facebook Login for Business in the emulator (docs/facebook-graph.md §4.6b): configurations defined through the
/// control API, the dialog opened with `config_id`, the code exchange giving a user's or a system user's token,
/// and `debug_token` listing the granted assets as `granular_scopes` `target_ids`; system users' tokens minted
/// directly.
@Suite("Login for Business")
struct BusinessLoginTests {
    static let redirect = "https://app.example/callback"

    func debug(_ harness: Harness, _ input: String) async throws -> JSONValue {
        let reply = try await harness.send(
            "GET", "/v25.0/debug_token?input_token=\(encoded(input))&access_token=1234567890%7Cs3cret")
        return try #require(reply.json?["data"])
    }

    func dialogURL(configID: String, responseType: String = "code", override: Bool = true, scope: String? = nil)
        -> String
    {
        var url =
            "/v25.0/dialog/oauth?client_id=1234567890&redirect_uri=\(encoded(Self.redirect))&state=s1"
            + "&response_type=\(responseType)&config_id=\(configID)"
        if override { url += "&override_default_response_type=true" }
        if let scope { url += "&scope=\(encoded(scope))" }
        return url
    }

    /// Approves the dialog as the harness user, posting the page's own hidden fields and nothing granted by hand.
    func approve(_ harness: Harness, configID: String) async throws -> String {
        let page = try await harness.send("GET", dialogURL(configID: configID))
        #expect(page.status == 200, "\(page.text)")
        #expect(page.text.contains(#"name="config_id" value="\#(configID)""#))
        #expect(page.text.contains(#"name="override_default_response_type" value="true""#))
        let body =
            "client_id=1234567890&redirect_uri=\(encoded(Self.redirect))&state=s1&response_type=code"
            + "&config_id=\(configID)&override_default_response_type=true&grants_shown=1"
            + "&user_id=\(harness.user.id)&action=approve"
        let reply = try await harness.send("POST", "/v25.0/dialog/oauth", body: body)
        #expect(reply.status == 302)
        let location = try #require(reply.header("location"))
        #expect(queryItems(location).value("state") == "s1")
        return try #require(queryItems(location).value("code"))
    }

    func exchange(_ harness: Harness, _ code: String) async throws -> Reply {
        try await harness.send(
            "GET",
            "/oauth/access_token?client_id=1234567890&client_secret=s3cret&redirect_uri=\(encoded(Self.redirect))"
                + "&code=\(code)")
    }

    @Test func aConfigurationGrantsItsPermissionsOnItsAssets() async throws {
        let harness = try Harness()
        let defined = try await harness.control(
            "POST", "business-configs",
            #"{"id":"9001","app_id":"1234567890","permissions":["pages_show_list","ads_read"],"#
                + #""assets":{"pages_show_list":["111","222"]}}"#)
        #expect(defined.status == 201, "\(defined.text)")
        #expect(defined.json?["token_type"]?.stringValue == "user")
        #expect(defined.json?["assets"]?["pages_show_list"] == .strings(["111", "222"]))
        let listed = try await harness.control("GET", "business-configs")
        #expect(listed.json?["configs"]?.arrayValue?.first?["id"]?.stringValue == "9001")

        // Checkboxes do not matter: a configuration is granted whole (grants_shown without any grant).
        let code = try await approve(harness, configID: "9001")
        let reply = try await exchange(harness, code)
        let token = try #require(reply.json?["access_token"]?.stringValue)
        #expect(reply.json?["expires_in"]?.intValue ?? 0 > 0)
        let data = try await debug(harness, token)
        #expect(data["type"]?.stringValue == "USER")
        #expect(data["scopes"] == .strings(["public_profile", "pages_show_list", "ads_read"]))
        let granular = try #require(data["granular_scopes"]?.arrayValue)
        #expect(granular.map { $0.objectValue?.map(\.0) ?? [] } == [["scope"], ["scope", "target_ids"], ["scope"]])
        #expect(granular[1]["scope"]?.stringValue == "pages_show_list" && granular[1]["target_ids"] == .strings(["111", "222"]))

        // The long-lived exchange keeps the assets.
        let long = try await harness.send(
            "GET",
            "/oauth/access_token?grant_type=fb_exchange_token&client_id=1234567890&client_secret=s3cret"
                + "&fb_exchange_token=\(token)")
        let longToken = try #require(long.json?["access_token"]?.stringValue)
        #expect(try await debug(harness, longToken)["granular_scopes"]?.arrayValue?[1]["target_ids"] == .strings(["111", "222"]))
    }

    @Test func aSystemUserConfigurationGivesASystemUsersToken() async throws {
        let harness = try Harness()
        try harness.emulator.defineConfiguration(
            id: "9002", appID: harness.app.id, permissions: ["business_management"],
            assets: ["business_management": ["333"]], tokenKind: .systemUser)
        let code = try await approve(harness, configID: "9002")
        let reply = try await exchange(harness, code)
        let token = try #require(reply.json?["access_token"]?.stringValue)
        let data = try await debug(harness, token)
        #expect(data["type"]?.stringValue == "SYSTEM_USER")
        #expect(data["expires_at"]?.intValue == 0 && data["is_valid"]?.boolValue == true)
        #expect(data["granular_scopes"]?.arrayValue?.last?["target_ids"] == .strings(["333"]))
    }

    @Test func theDialogRefusesUnknownOrForeignConfigurationsAndOtherResponseTypes() async throws {
        let harness = try Harness()
        try harness.emulator.registerApp(
            id: "5550001", secret: "other", name: "Other", clientToken: "c", redirectURIs: [Self.redirect])
        try harness.emulator.defineConfiguration(id: "9003", appID: "5550001", permissions: ["ads_read"])
        try harness.emulator.defineConfiguration(id: "9004", appID: harness.app.id, permissions: ["ads_read"])
        for url in [
            dialogURL(configID: "404"), dialogURL(configID: "9003"), dialogURL(configID: "9004", responseType: "token"),
            dialogURL(configID: "9004", override: false),
        ] {
            let reply = try await harness.send("GET", url)
            #expect(reply.status == 400, "\(url)")
        }
        // A scope beside a configuration is ignored: the configuration's permissions are asked.
        let page = try await harness.send("GET", dialogURL(configID: "9004", scope: "email,user_link"))
        #expect(page.status == 200 && page.text.contains(#"value="ads_read""#) && !page.text.contains(#"value="user_link""#))
    }

    @Test func configurationsAreChecked() async throws {
        let harness = try Harness()
        let bad = [
            #"{"app_id":"1234567890","permissions":["ads_read"],"token_type":"page"}"#,
            #"{"app_id":"1234567890","permissions":[]}"#,
            #"{"app_id":"1234567890"}"#,
            #"{"app_id":"1234567890","id":"12x","permissions":["ads_read"]}"#,
            #"{"app_id":"1234567890","permissions":["ads_read"],"assets":{"pages_show_list":["1"]}}"#,
            #"{"app_id":"1234567890","permissions":["ads_read"],"assets":{"ads_read":"1"}}"#,
            #"{"app_id":"999","permissions":["ads_read"]}"#,
        ]
        for body in bad {
            let reply = try await harness.control("POST", "business-configs", body)
            #expect((400...404).contains(reply.status), "\(body): \(reply.text)")
        }
        let made = try await harness.control("POST", "business-configs", #"{"app_id":"1234567890","permissions":["ads_read"]}"#)
        #expect(made.status == 201 && RandomText.isNumeric(made.json?["id"]?.stringValue ?? ""))
    }

    @Test func systemUserPageAndAppTokensHaveTheirTypes() async throws {
        let harness = try Harness()
        let system = try await harness.control(
            "POST", "tokens",
            #"{"app_id":"1234567890","user_id":"\#(harness.user.id)","type":"system_user","granted":["ads_read"],"#
                + #""assets":{"ads_read":["act_1"]}}"#)
        #expect(system.status == 201 && system.json?["type"]?.stringValue == "SYSTEM_USER", "\(system.text)")
        let systemData = try await debug(harness, try #require(system.json?["access_token"]?.stringValue))
        #expect(systemData["type"]?.stringValue == "SYSTEM_USER" && systemData["expires_at"]?.intValue == 0)
        #expect(systemData["granular_scopes"]?.arrayValue?.last?["target_ids"] == .strings(["act_1"]))

        let page = try harness.emulator.issuePageToken(appID: harness.app.id, userID: harness.user.id, pageID: "55")
        #expect(try await debug(harness, page.accessToken)["type"]?.stringValue == "PAGE")
        let app = try harness.emulator.appToken(for: harness.app.id)
        #expect(try await debug(harness, app)["type"]?.stringValue == "APP")

        // A user token with assets, through the control API; revoking the permission drops its assets.
        let user = try await harness.control(
            "POST", "tokens",
            #"{"app_id":"1234567890","user_id":"\#(harness.user.id)","granted":["pages_show_list"],"#
                + #""assets":{"pages_show_list":["111"]}}"#)
        let userToken = try #require(user.json?["access_token"]?.stringValue)
        #expect(user.json?["assets"]?["pages_show_list"] == .strings(["111"]))
        #expect(try await debug(harness, userToken)["granular_scopes"]?.arrayValue?.last?["target_ids"] == .strings(["111"]))
        let revoked = try await harness.send(
            "DELETE", "/v25.0/me/permissions/pages_show_list?access_token=\(userToken)")
        #expect(revoked.status == 200, "\(revoked.text)")
        let after = try #require(harness.emulator.token(userToken))
        #expect(after.targets.isEmpty && !after.granted.contains("pages_show_list"))
    }
}
