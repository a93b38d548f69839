import Testing

@testable import GraphEmulator

/// `/oauth/access_token`: code exchange, long-lived exchange, app tokens (docs/facebook-graph.md §4, §12.8).
@Suite("oauth/access_token")
struct OAuthTests {
    static let redirect = "https://app.example/callback"

    func exchange(
        _ harness: Harness, code: String, redirect: String = OAuthTests.redirect, secret: String = "s3cret"
    )
        async throws -> Reply
    {
        try await harness.send(
            "GET",
            "/v21.0/oauth/access_token?client_id=1234567890&redirect_uri=\(encoded(redirect))"
                + "&client_secret=\(secret)&code=\(code)")
    }

    @Test func codeIsSingleUse() async throws {
        let harness = try Harness()
        let code = try harness.emulator.authorizationCode(
            appID: harness.app.id, userID: harness.user.id, redirectURI: Self.redirect, granted: ["email"])
        let first = try await exchange(harness, code: code)
        #expect(first.status == 200)
        let body = try #require(first.json?.objectValue)
        #expect(body.map(\.0) == ["access_token", "token_type", "expires_in"])
        #expect(first.json?["token_type"]?.stringValue == "bearer")
        let expiresIn = try #require(first.json?["expires_in"]?.intValue)
        #expect((3600...7200).contains(expiresIn))
        let token = try #require(first.json?["access_token"]?.stringValue)
        #expect(token.hasPrefix("EAA"))
        #expect(harness.emulator.token(token)?.granted == ["public_profile", "email"])

        let again = try await exchange(harness, code: code)
        #expect(again.status == 400)
        #expect(
            again.text.hasPrefix(
                #"{"error":{"message":"This authorization code has been used.","type":"OAuthException","code":100,"#
                    + #""error_subcode":36009,"#
            ))
        #expect(
            again.header("www-authenticate")
                == #"OAuth "Facebook Platform" "invalid_code" "This authorization code has been used.""#)
    }

    @Test func codeExpiryRedirectAndClientChecks() async throws {
        let harness = try Harness()
        let mint = {
            try harness.emulator.authorizationCode(
                appID: harness.app.id, userID: harness.user.id, redirectURI: Self.redirect)
        }
        let stale = try mint()
        harness.emulator.advanceClock(by: 601)
        let expired = try await exchange(harness, code: stale)
        #expect(expired.graphError?["message"]?.stringValue == "This authorization code has expired.")
        #expect(expired.graphError?["code"]?.intValue == 100)

        let mismatch = try await exchange(harness, code: try mint(), redirect: Self.redirect + "/")
        #expect(mismatch.graphError?["error_subcode"]?.intValue == 36008)
        #expect(
            mismatch.graphError?["message"]?.stringValue
                == "Error validating verification code. Please make sure your redirect_uri is identical to the one"
                + " you used in the OAuth dialog request")

        let badSecret = try await exchange(harness, code: try mint(), secret: "nope")
        #expect(badSecret.graphError?["message"]?.stringValue == "Error validating client secret.")
        #expect(badSecret.graphError?["code"]?.intValue == 1)

        let badClient = try await harness.send("GET", "/oauth/access_token?client_id=42&client_secret=x&code=AQx")
        #expect(
            badClient.graphError?["message"]?.stringValue == "Error validating application. Invalid application ID.")
        #expect(badClient.graphError?["code"]?.intValue == 101)
        let noClient = try await harness.send("GET", "/oauth/access_token?code=AQx")
        #expect(noClient.graphError?["message"]?.stringValue == "Missing client_id parameter.")

        let malformed = try await exchange(harness, code: "garbage")
        #expect(malformed.graphError?["message"]?.stringValue == "Invalid verification code format.")
        let grant = try await harness.send("GET", "/oauth/access_token?grant_type=password&client_id=1234567890")
        #expect(
            grant.graphError?["message"]?.stringValue
                == "Invalid grant_type: 'password'. Supported types: authorization_code, client_credentials")
    }

    @Test func longLivedExchange() async throws {
        let harness = try Harness()
        let short = try harness.token()
        let reply = try await harness.send(
            "GET",
            "/v21.0/oauth/access_token?grant_type=fb_exchange_token&client_id=1234567890&client_secret=s3cret"
                + "&fb_exchange_token=\(short)")
        #expect(reply.status == 200)
        let long = try #require(reply.json?["access_token"]?.stringValue)
        #expect(long != short)
        let expiresIn = try #require(reply.json?["expires_in"]?.intValue)
        #expect(abs(expiresIn - 5_184_000) < 60)
        #expect(harness.emulator.token(long)?.isLongLived == true)
        // The short-lived token stays valid.
        #expect(try await harness.send("GET", "/me?access_token=\(short)").status == 200)
        #expect(try await harness.send("GET", "/me?access_token=\(long)").status == 200)

        // An expired token cannot be exchanged.
        harness.emulator.advanceClock(by: 3 * 3600)
        let refused = try await harness.send(
            "GET",
            "/oauth/access_token?grant_type=fb_exchange_token&client_id=1234567890&client_secret=s3cret"
                + "&fb_exchange_token=\(short)")
        #expect(refused.status == 400)
        #expect(refused.graphError?["code"]?.intValue == 190)
        #expect(refused.graphError?["error_subcode"]?.intValue == 463)
    }

    @Test func clientCredentialsAndSSOExtension() async throws {
        let harness = try Harness()
        let reply = try await harness.send(
            "POST", "/v21.0/oauth/access_token",
            body: "grant_type=client_credentials&client_id=1234567890&client_secret=s3cret")
        #expect(reply.status == 200)
        let appToken = try #require(reply.json?["access_token"]?.stringValue)
        #expect(appToken.hasPrefix("1234567890|"))
        #expect(reply.json?["token_type"]?.stringValue == "bearer")
        let token = try harness.token()
        let debug = try await harness.send(
            "GET", "/debug_token?input_token=\(token)&access_token=\(encoded(appToken))")
        #expect(debug.json?["data"]?["is_valid"]?.boolValue == true)

        let extended = try await harness.send(
            "GET", "/oauth/access_token?grant_type=fb_extend_sso_token&client_id=1234567890&access_token=\(token)")
        #expect(extended.json?["access_token"]?.stringValue == token)
        #expect((extended.json?["expires_at"]?.intValue ?? 0) > harness.emulator.now + 59 * 86400)
        #expect(extended.json?["data_access_expiration_time"]?.intValue != nil)
    }
}
