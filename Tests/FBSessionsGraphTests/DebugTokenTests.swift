import FBSessionsCore
import FBSessionsGraph
import Foundation
import Testing

@Suite("debug_token shapes (docs/facebook-graph.md §3.3)")
struct DebugTokenTests {
    private func inspect(_ body: String, status: Int = 200) async throws -> GraphTokenInfo {
        try await withGraphPeer(retry: .none, { _ in json(status, body) }) { _, client in
            try await client.debugToken(inputToken: Fixture.userToken, credentials: Fixture.credentials)
        }
    }

    @Test("a valid short-lived token")
    func validShort() async throws {
        let info = try await inspect(GraphBodies.debugValidShort)
        #expect(info.isValid)
        #expect(info.appID == "257422819769992")
        #expect(info.userID == "123")
        #expect(info.isUserToken)
        #expect(info.application == "oauth2-rs-f-b-web-app-demo")
        #expect(info.expiresAt == Date(timeIntervalSince1970: 1_668_754_800))
        #expect(info.dataAccessExpiresAt == Date(timeIntervalSince1970: 1_676_526_788))
        #expect(info.issuedAt == nil)
        #expect(info.scopes == ["public_profile"])
        #expect(info.metadata == ["auth_type": "rerequest"])
        #expect(info.error == nil)
        #expect(info.failure(now: Date(timeIntervalSince1970: 1_668_750_000)) == nil)
        #expect(info.isIssued(forApp: "257422819769992"))
        #expect(!info.isIssued(forApp: Fixture.appID))
    }

    @Test("a valid long-lived token has issued_at")
    func validLong() async throws {
        let info = try await inspect(GraphBodies.debugValidLong)
        #expect(info.isValid)
        #expect(info.issuedAt == Date(timeIntervalSince1970: 1_668_750_788))
        let lifetime = try #require(info.expiresAt).timeIntervalSince(try #require(info.issuedAt))
        #expect(lifetime == 5_184_000)
    }

    @Test("granular scopes, and the old numeric app_id with metadata.sso")
    func granularAndNumeric() async throws {
        let granular = try await inspect(GraphBodies.debugGranular)
        #expect(
            granular.granularScopes == [
                GraphTokenInfo.GranularScope(scope: "pages_show_list", targetIDs: ["111", "222"])
            ])
        let numeric = try await inspect(GraphBodies.debugNumericAppID)
        #expect(numeric.appID == "138483919580948")
        #expect(numeric.metadata["sso"] == "iphone-safari")
    }

    @Test("an expired token is returned invalid with its error; failure() is invalidToken(token_expired)")
    func expired() async throws {
        let info = try await inspect(GraphBodies.debugExpired)
        #expect(!info.isValid)
        #expect(info.userID == "123")
        #expect(info.scopes == ["email", "public_profile"])
        #expect(info.error?.code == 190)
        #expect(info.error?.subcode == 463)
        #expect(info.error?.httpStatus == 200)
        #expect(info.failure()?.closedReason == .tokenExpired)
    }

    @Test("password changed (460) and revoked (466): expires_at 0 is nil, failure() maps the subcode")
    func passwordChangedAndRevoked() async throws {
        let changed = try await inspect(GraphBodies.debugPasswordChanged)
        #expect(changed.expiresAt == nil)
        #expect(changed.failure()?.closedReason == .passwordChanged)
        let revoked = try await inspect(GraphBodies.debugRevoked)
        #expect(revoked.failure()?.closedReason == .revoked)
    }

    @Test("a garbage input token (HTTP 200, three keys) is invalid, token_invalid")
    func garbage() async throws {
        let info = try await inspect(GraphBodies.debugGarbage)
        #expect(!info.isValid)
        #expect(info.appID == nil)
        #expect(info.userID == nil)
        #expect(info.scopes.isEmpty)
        #expect(info.error?.message == "Invalid OAuth access token - Cannot parse access token")
        #expect(info.failure()?.closedReason == .tokenInvalid)
    }

    @Test("an app token as input")
    func appToken() async throws {
        let info = try await inspect(GraphBodies.debugAppToken)
        #expect(info.isValid)
        #expect(info.type == "APP")
        #expect(!info.isUserToken)
    }

    @Test("is_valid false without an error: token_expired when expires_at passed, else token_invalid")
    func invalidWithoutError() throws {
        let past = GraphTokenInfo(isValid: false, expiresAt: Date(timeIntervalSince1970: 1000))
        #expect(past.failure(now: Date(timeIntervalSince1970: 2000))?.closedReason == .tokenExpired)
        let never = GraphTokenInfo(isValid: false)
        #expect(never.failure()?.closedReason == .tokenInvalid)
    }

    @Test("the app token refused (top-level 190) is other, never invalidToken; 100 is other")
    func appTokenRefused() async throws {
        for body in [GraphBodies.debugBadAppToken, GraphBodies.debugNoAppToken] {
            try await withGraphPeer({ _ in json(400, body) }) { _, client in
                let error = await graphError {
                    try await client.debugToken(inputToken: Fixture.userToken, credentials: Fixture.credentials)
                }
                #expect(error.map(ErrorClass.init) == .other)
                #expect(error?.closedReason == nil)
            }
        }
    }

    @Test("a transient data.error is thrown and retried, then the answer is returned")
    func transientDataError() async throws {
        let script = PeerScript([json(200, GraphBodies.debugSystemError), json(200, GraphBodies.debugValidLong)])
        try await withGraphPeer({ script.next($0) }) { peer, client in
            let info = try await client.debugToken(inputToken: Fixture.userToken, credentials: Fixture.credentials)
            #expect(info.isValid)
            #expect(peer.requestCount == 2)
        }
        let always = PeerScript([json(200, GraphBodies.debugSystemError)])
        try await withGraphPeer({ always.next($0) }) { _, client in
            let error = await graphError {
                try await client.debugToken(inputToken: Fixture.userToken, credentials: Fixture.credentials)
            }
            #expect(error.map(ErrorClass.init) == .transient(.graphError))
        }
    }

    @Test("wrong types in debug_token are transient(malformed_response)")
    func wrongTypes() async throws {
        for body in [
            #"{"data":{"is_valid":"yes"}}"#, #"{"data":[]}"#, #"{"data":{"is_valid":true,"scopes":"email"}}"#,
            #"{"data":{"is_valid":true,"expires_at":"soon"}}"#, #"{"is_valid":true}"#,
        ] {
            try await withGraphPeer(retry: .none, { _ in json(200, body) }) { _, client in
                let error = await graphError {
                    try await client.debugToken(inputToken: Fixture.userToken, credentials: Fixture.credentials)
                }
                #expect(error.map(ErrorClass.init) == .transient(.malformedResponse), "\(body)")
            }
        }
    }
}
