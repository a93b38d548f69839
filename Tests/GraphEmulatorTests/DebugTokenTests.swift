import Testing

@testable import GraphEmulator

/// `GET /debug_token` shapes (docs/facebook-graph.md §3, §12.6).
@Suite("debug_token")
struct DebugTokenTests {
    func debug(_ harness: Harness, _ input: String, as inspector: String = "1234567890%7Cs3cret") async throws -> Reply
    {
        try await harness.send("GET", "/v21.0/debug_token?input_token=\(encoded(input))&access_token=\(inspector)")
    }

    @Test func shortAndLongLivedUserTokens() async throws {
        let harness = try Harness()
        let short = try harness.emulator.issueToken(
            appID: harness.app.id, userID: harness.user.id, granted: ["public_profile", "email"],
            authType: "rerequest")
        let reply = try await debug(harness, short.accessToken)
        #expect(reply.status == 200)
        let data = try #require(reply.json?["data"])
        #expect(
            data.objectValue?.map(\.0) == [
                "app_id", "type", "application", "data_access_expires_at", "expires_at", "is_valid", "metadata",
                "scopes", "granular_scopes", "user_id",
            ])
        #expect(data["app_id"]?.stringValue == "1234567890")
        #expect(data["type"]?.stringValue == "USER")
        #expect(data["application"]?.stringValue == "Test App")
        #expect(data["is_valid"]?.boolValue == true)
        #expect(data["expires_at"]?.intValue == short.expiresAt)
        #expect(data["data_access_expires_at"]?.intValue == short.dataAccessExpiresAt)
        #expect(data["metadata"]?["auth_type"]?.stringValue == "rerequest")
        #expect(data["scopes"] == .strings(["public_profile", "email"]))
        #expect(data["granular_scopes"]?.arrayValue?.count == 2)
        #expect(data["user_id"]?.stringValue == harness.user.id)

        let long = try harness.emulator.issueToken(appID: harness.app.id, userID: harness.user.id, longLived: true)
        let longData = try #require(try await debug(harness, long.accessToken).json?["data"])
        #expect(longData["issued_at"]?.intValue == long.issuedAt)
        #expect(long.expiresAt - long.issuedAt == 5_184_000)
    }

    @Test func expiredAfterMovingTheClock() async throws {
        let harness = try Harness()
        let token = try harness.token()
        harness.emulator.advanceClock(by: 3 * 3600)
        let reply = try await debug(harness, token)
        #expect(reply.status == 200)
        let data = try #require(reply.json?["data"])
        #expect(data["is_valid"]?.boolValue == false)
        #expect(data["error"]?["code"]?.intValue == 190)
        #expect(data["error"]?["subcode"]?.intValue == 463)
        #expect(data["error"]?["error_subcode"] == nil)
        #expect(
            data["error"]?["message"]?.stringValue?.hasPrefix("Error validating access token: Session has expired on ")
                == true)
        #expect(data["expires_at"]?.intValue ?? 0 > 0)
        #expect(data["app_id"]?.stringValue == "1234567890")
        #expect(data["user_id"]?.stringValue == harness.user.id)
        #expect(data["scopes"]?.arrayValue?.isEmpty == false)
    }

    @Test(arguments: [458, 459, 460, 464, 466, 467])
    func invalidatedTokens(subcode: Int) async throws {
        let harness = try Harness()
        let token = try harness.token()
        let reason = try #require(TokenInvalidation(rawValue: subcode))
        try harness.emulator.invalidateToken(token, reason: reason)
        let data = try #require(try await debug(harness, token).json?["data"])
        #expect(data["is_valid"]?.boolValue == false)
        #expect(data["expires_at"]?.intValue == 0)
        #expect(data["error"]?["subcode"]?.intValue == Int64(subcode))
        #expect(data["error"]?["message"]?.stringValue == ErrorBodyTests.messages[reason])
    }

    @Test func dataAccessExpiryKeepsTheTokenValid() async throws {
        let harness = try Harness()
        let token = try harness.token()
        try harness.emulator.invalidateToken(token, reason: .dataAccessExpired)
        let data = try #require(try await debug(harness, token).json?["data"])
        #expect(data["is_valid"]?.boolValue == true)
        #expect(data["data_access_expires_at"]?.intValue ?? 0 <= harness.emulator.now)
    }

    @Test func garbageInputIsAnAnswerNotAnError() async throws {
        let harness = try Harness()
        let reply = try await debug(harness, "garbage")
        #expect(reply.status == 200)
        #expect(
            reply.text
                == #"{"data":{"error":{"code":190,"message":"Invalid OAuth access token - Cannot parse access token"},"#
                + #""is_valid":false,"scopes":[]}}"#
        )
    }

    @Test func appAndPageShapes() async throws {
        let harness = try Harness()
        let app = try await debug(harness, "1234567890|s3cret")
        #expect(
            app.text
                == #"{"data":{"app_id":"1234567890","type":"APP","application":"Test App","is_valid":true,"#
                + #""scopes":[]}}"#
        )
        let page = try harness.emulator.issuePageToken(appID: harness.app.id, userID: harness.user.id, pageID: "777")
        let data = try #require(try await debug(harness, page.accessToken).json?["data"])
        #expect(data["type"]?.stringValue == "PAGE")
        #expect(data["profile_id"]?.stringValue == "777")
        #expect(data["expires_at"]?.intValue == 0)
    }

    @Test func inspectorRules() async throws {
        let harness = try Harness()
        let token = try harness.token()
        let missing = try await harness.send("GET", "/debug_token?input_token=\(token)")
        #expect(missing.status == 400)
        #expect(
            missing.text.hasPrefix(
                #"{"error":{"message":"(#100) You must provide an app access token, or a user access token that is"#
                    + #" an owner or developer of the app","type":"OAuthException","code":100,"fbtrace_id":"#
            ))
        let asUser = try await debug(harness, token, as: token)
        #expect(asUser.graphError?["code"]?.intValue == 100)
        let noInput = try await harness.send("GET", "/debug_token?access_token=1234567890%7Cs3cret")
        #expect(noInput.graphError?["message"]?.stringValue == "(#100) The parameter input_token is required")
        // A developer's user token may inspect; the client_credentials token works like APP_ID|SECRET.
        try harness.emulator.registerApp(
            id: "1234567890", secret: "s3cret", name: "Test App", clientToken: "client-tok",
            developerIDs: [harness.user.id])
        #expect(try await debug(harness, token, as: token).status == 200)
        let appToken = try harness.emulator.appToken(for: harness.app.id)
        #expect(try await debug(harness, token, as: encoded(appToken)).json?["data"]?["is_valid"]?.boolValue == true)
        // A token of another app is described as what it is (callers must compare app_id).
        let other = try harness.emulator.registerApp(id: "999", secret: "other")
        let foreign = try harness.emulator.issueToken(appID: other.id, userID: harness.user.id)
        #expect(try await debug(harness, foreign.accessToken).json?["data"]?["app_id"]?.stringValue == "999")
    }
}
