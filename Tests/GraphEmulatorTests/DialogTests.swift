import Testing

@testable import GraphEmulator

/// The login dialog (docs/facebook-graph.md §4.1, §12.7).
@Suite("Login dialog")
struct DialogTests {
    static let redirect = "https://app.example/callback"

    func approve(
        _ harness: Harness, scope: String, authType: String? = nil, grants: [String]? = nil
    ) async throws -> Reply {
        var body =
            "client_id=1234567890&redirect_uri=\(encoded(Self.redirect))&state=xyz&scope=\(encoded(scope))"
            + "&user_id=\(harness.user.id)&action=approve"
        if let authType { body += "&auth_type=\(authType)" }
        if let grants { body += "&grants_shown=1" + grants.map { "&grant=\($0)" }.joined() }
        return try await harness.send("POST", "/v25.0/dialog/oauth", body: body)
    }

    func code(from reply: Reply) throws -> String {
        let location = try #require(reply.header("location"))
        return try #require(queryItems(location).value("code"))
    }

    func exchange(_ harness: Harness, _ code: String) async throws -> String {
        let reply = try await harness.send(
            "GET",
            "/oauth/access_token?client_id=1234567890&client_secret=s3cret&redirect_uri=\(encoded(Self.redirect))"
                + "&code=\(code)")
        return try #require(reply.json?["access_token"]?.stringValue)
    }

    @Test func pageListsUsersAndPermissions() async throws {
        let harness = try Harness()
        let reply = try await harness.send(
            "GET",
            "/v25.0/dialog/oauth?client_id=1234567890&redirect_uri=\(encoded(Self.redirect))&state=a%22b"
                + "&scope=email%20user_link")
        #expect(reply.status == 200)
        #expect(reply.header("content-type")?.hasPrefix("text/html") == true)
        let html = reply.text
        #expect(html.contains("Jane Q Doe"))
        #expect(html.contains(#"action="/v25.0/dialog/oauth""#))
        #expect(html.contains(#"name="state" value="a&quot;b""#))
        #expect(html.contains(#"name=grant value="email""#) && html.contains(#"name=grant value="user_link""#))
        #expect(html.contains("value=approve") && html.contains("value=cancel"))
        #expect(!html.contains("<script"))
    }

    @Test func refusesUnknownAppsAndRedirects() async throws {
        let harness = try Harness()
        let app = try await harness.send(
            "GET", "/v25.0/dialog/oauth?client_id=42&redirect_uri=\(encoded(Self.redirect))")
        #expect(app.status == 400)
        #expect(app.text.contains("Invalid App ID"))
        let uri = try await harness.send(
            "GET", "/v25.0/dialog/oauth?client_id=1234567890&redirect_uri=\(encoded("https://evil.example/"))")
        #expect(uri.status == 400)
        #expect(uri.text.contains("URL Blocked"))
    }

    @Test func approveRedirectsWithCodeAndState() async throws {
        let harness = try Harness()
        let reply = try await approve(harness, scope: "email")
        #expect(reply.status == 302)
        let location = try #require(reply.header("location"))
        #expect(location.hasPrefix(Self.redirect + "?code=AQ"))
        #expect(location.hasSuffix("&state=xyz#_=_"))
        let token = try await exchange(harness, try code(from: reply))
        #expect(harness.emulator.token(token)?.granted == ["public_profile", "email"])
    }

    @Test func cancelRedirectsWithTheError() async throws {
        let harness = try Harness()
        let reply = try await harness.send(
            "POST", "/v25.0/dialog/oauth",
            body: "client_id=1234567890&redirect_uri=\(encoded(Self.redirect))&state=xyz&action=cancel")
        #expect(reply.status == 302)
        #expect(
            reply.header("location")
                == Self.redirect
                + "?error=access_denied&error_code=200&error_description=Permissions+error&error_reason=user_denied"
                + "&state=xyz"
        )
    }

    @Test func declinedStaysDeclinedUnlessRerequested() async throws {
        let harness = try Harness()
        let first = try await exchange(harness, try code(from: try await approve(harness, scope: "email", grants: [])))
        #expect(harness.emulator.token(first)?.declined == ["email"])
        let again = try await exchange(
            harness, try code(from: try await approve(harness, scope: "email", grants: ["email"])))
        #expect(harness.emulator.token(again)?.declined == ["email"])
        let rerequested = try await exchange(
            harness,
            try code(from: try await approve(harness, scope: "email", authType: "rerequest", grants: ["email"])))
        #expect(harness.emulator.token(rerequested)?.granted == ["public_profile", "email"])
        #expect(harness.emulator.token(rerequested)?.declined == [])
    }

    @Test func reauthorizeRenewsDataAccess() async throws {
        let harness = try Harness()
        let old = try harness.emulator.issueToken(
            appID: harness.app.id, userID: harness.user.id, expiresIn: 0, granted: ["public_profile"],
            expired: ["email"])
        try harness.emulator.invalidateToken(old.accessToken, reason: .dataAccessExpired)
        #expect(
            try await harness.send("GET", "/me?access_token=\(old.accessToken)").graphError?["error_subcode"]?.intValue
                == 493)
        let reply = try await approve(harness, scope: "", authType: "reauthorize")
        #expect(reply.status == 302)
        let renewed = try #require(harness.emulator.token(old.accessToken))
        #expect(renewed.dataAccessExpiresAt > harness.emulator.now + 89 * 86400)
        #expect(renewed.expired.isEmpty && renewed.granted.contains("email"))
        #expect(try await harness.send("GET", "/me?access_token=\(old.accessToken)").status == 200)
        let token = try await exchange(harness, try code(from: reply))
        let metadata = try await harness.send(
            "GET", "/debug_token?input_token=\(token)&access_token=1234567890%7Cs3cret")
        #expect(metadata.json?["data"]?["metadata"]?["auth_type"]?.stringValue == "reauthorize")
    }

    @Test func tokenResponseTypeUsesTheFragment() async throws {
        let harness = try Harness()
        let reply = try await harness.send(
            "POST", "/v25.0/dialog/oauth",
            body: "client_id=1234567890&redirect_uri=\(encoded(Self.redirect))&state=s1&response_type=token"
                + "&user_id=\(harness.user.id)&action=approve")
        let location = try #require(reply.header("location"))
        #expect(location.hasPrefix(Self.redirect + "#access_token=EAA"))
        #expect(location.hasSuffix("&state=s1"))
    }
}
