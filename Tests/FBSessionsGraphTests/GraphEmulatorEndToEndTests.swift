import FBSessionsCore
import FBSessionsGraph
import Foundation
import GraphEmulator
import HTTPServer
import TestSupport
import Testing

/// A running emulator with one app (which requires `appsecret_proof`), one user and a client pointed at it.
struct EmulatorRig: Sendable {
    let emulator: Emulator
    let server: Server
    let client: GraphClient
    let credentials: GraphCredentials
    let app: EmulatedApp
    let user: EmulatedUser

    init(retry: GraphClient.RetryPolicy = Fixture.fastRetry) throws {
        emulator = Emulator()
        server = try emulator.start()
        app = try emulator.registerApp(name: "E2E", requiresProof: true)
        user = try emulator.createUser(firstName: "Jane", middleName: "Q", lastName: "Doe", email: "jane@example.com")
        credentials = GraphCredentials(appID: app.id, appSecret: app.secret)
        client = try GraphClient(
            configuration: .init(baseURL: emulator.baseURL, timeout: .seconds(10), retry: retry, allowsPlainHTTP: true),
            logger: SecretsTranscript.logger("fbsessiond.graph")
        )
    }

    /// A short-lived token with `public_profile` and `email` granted and `user_friends` declined.
    func token(longLived: Bool = false) throws -> String {
        try emulator.issueToken(
            appID: app.id, userID: user.id, longLived: longLived, granted: ["public_profile", "email"],
            declined: ["user_friends"]
        ).accessToken
    }

    func stop() {
        client.shutdown()
        server.shutdown()
    }
}

@Suite("GraphClient against the GraphEmulator, end to end over HTTP")
struct GraphEmulatorEndToEndTests {
    @Test("debug_token of a valid token: this app, this user, USER, expiry, data-access expiry, scopes")
    func debugTokenValid() async throws {
        let rig = try EmulatorRig()
        defer { rig.stop() }
        let token = try rig.token()
        let info = try await rig.client.debugToken(inputToken: token, credentials: rig.credentials)
        #expect(info.isValid)
        #expect(info.isIssued(forApp: rig.app.id))
        #expect(info.userID == rig.user.id)
        #expect(info.isUserToken)
        #expect(info.scopes.contains("public_profile") && info.scopes.contains("email"))
        let now = Date(timeIntervalSince1970: TimeInterval(rig.emulator.now))
        let expiresIn = try #require(info.expiresAt).timeIntervalSince(now)
        #expect(expiresIn > 3000 && expiresIn <= 7200)
        #expect(try #require(info.dataAccessExpiresAt) > now)
        #expect(info.failure(now: now) == nil)
    }

    @Test("debug_token of an expired token is invalid with token_expired; a garbage token with token_invalid")
    func debugTokenExpired() async throws {
        let rig = try EmulatorRig()
        defer { rig.stop() }
        let token = try rig.token()
        rig.emulator.advanceClock(by: 3 * 3600)
        let info = try await rig.client.debugToken(inputToken: token, credentials: rig.credentials)
        #expect(!info.isValid)
        #expect(info.error?.subcode == 463)
        #expect(info.failure()?.closedReason == .tokenExpired)
        let garbage = try await rig.client.debugToken(inputToken: "not-a-token", credentials: rig.credentials)
        #expect(!garbage.isValid)
        #expect(garbage.failure()?.closedReason == .tokenInvalid)
    }

    @Test("me returns the asked fields; email with the email permission, no link without user_link")
    func me() async throws {
        let rig = try EmulatorRig()
        defer { rig.stop() }
        let profile = try await rig.client.me(
            fields: GraphProfile.defaultFields, accessToken: try rig.token(), credentials: rig.credentials
        )
        #expect(profile.id == rig.user.id)
        #expect(profile.firstName == "Jane")
        #expect(profile.middleName == "Q")
        #expect(profile.lastName == "Doe")
        #expect(profile.name == "Jane Q Doe")
        #expect(profile.email == "jane@example.com")
        #expect(profile.link == nil)
        #expect(profile.picture?.url.isEmpty == false)
        #expect(rig.emulator.callCount(.me) == 1)
    }

    @Test("permissions: granted and declined")
    func permissions() async throws {
        let rig = try EmulatorRig()
        defer { rig.stop() }
        let permissions = try await rig.client.permissions(accessToken: try rig.token(), credentials: rig.credentials)
        #expect(Set(permissions.granted) == ["public_profile", "email"])
        #expect(permissions.declined == ["user_friends"])
        #expect(permissions.expired.isEmpty)
    }

    @Test("the long-lived exchange gives a new ~60-day token that debug_token shows with issued_at")
    func longLivedExchange() async throws {
        let rig = try EmulatorRig()
        defer { rig.stop() }
        let short = try rig.token()
        let grant = try await rig.client.exchangeForLongLivedToken(accessToken: short, credentials: rig.credentials)
        #expect(grant.accessToken != short)
        #expect(grant.tokenType == "bearer")
        let lifetime = try #require(grant.expiresIn)
        #expect(lifetime > 5_000_000 && lifetime <= 5_184_000)
        let info = try await rig.client.debugToken(inputToken: grant.accessToken, credentials: rig.credentials)
        #expect(info.isValid)
        #expect(info.issuedAt != nil)
        #expect(try await rig.client.debugToken(inputToken: short, credentials: rig.credentials).isValid)
    }

    @Test("every invalidation subcode reaches the right typed error on /me", arguments: TokenInvalidation.allCases)
    func invalidations(_ reason: TokenInvalidation) async throws {
        let rig = try EmulatorRig()
        defer { rig.stop() }
        let token = try rig.token()
        try rig.emulator.invalidateToken(token, reason: reason)
        let error = await graphError {
            try await rig.client.me(fields: ["id"], accessToken: token, credentials: rig.credentials)
        }
        let expected: ErrorClass =
            switch reason {
            case .appNotInstalled: .invalidToken(.appRemoved)
            case .checkpointed: .invalidToken(.checkpoint)
            case .passwordChanged: .invalidToken(.passwordChanged)
            case .expired: .invalidToken(.tokenExpired)
            case .unconfirmedUser: .invalidToken(.userUnconfirmed)
            case .invalidatedByAPI: .invalidToken(.revoked)
            case .loggedOut: .invalidToken(.tokenInvalid)
            case .dataAccessExpired: .dataAccessExpired
            }
        #expect(error.map(ErrorClass.init) == expected)
        #expect(rig.emulator.callCount(.me) == 1)
    }

    @Test("without error_subcode, 190 is token_invalid and the 90-day text is still data-access expiry")
    func omittedSubcode() async throws {
        let rig = try EmulatorRig()
        defer { rig.stop() }
        rig.emulator.omitsErrorSubcode = true
        let expired = try rig.token()
        try rig.emulator.invalidateToken(expired, reason: .expired)
        let error = await graphError {
            try await rig.client.me(fields: ["id"], accessToken: expired, credentials: rig.credentials)
        }
        #expect(error?.closedReason == .tokenInvalid)
        let stale = try rig.token()
        try rig.emulator.invalidateToken(stale, reason: .dataAccessExpired)
        let staleError = await graphError {
            try await rig.client.me(fields: ["id"], accessToken: stale, credentials: rig.credentials)
        }
        #expect(staleError.map(ErrorClass.init) == .dataAccessExpired)
    }

    @Test("code exchange works once; the reused code is other and is not retried")
    func codeExchange() async throws {
        let rig = try EmulatorRig()
        defer { rig.stop() }
        let redirect = "https://app.example/callback"
        let code = try rig.emulator.authorizationCode(
            appID: rig.app.id, userID: rig.user.id, redirectURI: redirect, granted: ["public_profile", "email"]
        )
        let grant = try await rig.client.exchangeCode(code: code, redirectURI: redirect, credentials: rig.credentials)
        let profile = try await rig.client.me(
            fields: ["id"], accessToken: grant.accessToken, credentials: rig.credentials)
        #expect(profile.id == rig.user.id)
        let reused = await graphError {
            try await rig.client.exchangeCode(code: code, redirectURI: redirect, credentials: rig.credentials)
        }
        #expect(reused.map(ErrorClass.init) == .other)
        #expect(reused?.detail?.subcode == 36009)
        #expect(rig.emulator.callCount(.oauthAccessToken) == 2)
    }

    @Test("revoking the app's permissions invalidates the token")
    func revoke() async throws {
        let rig = try EmulatorRig()
        defer { rig.stop() }
        let token = try rig.token()
        try await rig.client.revokePermissions(accessToken: token, credentials: rig.credentials)
        let error = await graphError {
            try await rig.client.me(fields: ["id"], accessToken: token, credentials: rig.credentials)
        }
        #expect(error?.closedReason == .appRemoved || error?.closedReason == .revoked)
    }

    @Test("the picture with redirect=false")
    func picture() async throws {
        let rig = try EmulatorRig()
        defer { rig.stop() }
        let picture = try await rig.client.pictureURL(
            size: GraphPictureSize(kind: .large), accessToken: try rig.token(), credentials: rig.credentials
        )
        #expect(!picture.url.isEmpty)
        #expect(!picture.isSilhouette)
        #expect((picture.width ?? 0) > 0)
    }

    @Test("a wrong app secret gives a wrong appsecret_proof: other, never a closed session")
    func wrongProof() async throws {
        let rig = try EmulatorRig()
        defer { rig.stop() }
        let wrong = GraphCredentials(appID: rig.app.id, appSecret: "0123456789abcdef")
        let error = await graphError {
            try await rig.client.me(fields: ["id"], accessToken: try rig.token(), credentials: wrong)
        }
        #expect(error.map(ErrorClass.init) == .other)
        #expect(error?.closedReason == nil)
    }

    @Test("injected faults: 5xx and dropped connections retried, rate limits surfaced with x-app-usage")
    func faults() async throws {
        let rig = try EmulatorRig()
        defer { rig.stop() }
        let token = try rig.token()
        rig.emulator.injectFault(.httpStatus(500), endpoint: .me, count: 2)
        _ = try await rig.client.me(fields: ["id"], accessToken: token, credentials: rig.credentials)
        #expect(rig.emulator.callCount(.me) == 3)
        rig.emulator.resetCounters()
        rig.emulator.injectFault(.dropConnection, endpoint: .permissions, count: 1)
        _ = try await rig.client.permissions(accessToken: token, credentials: rig.credentials)
        #expect(rig.emulator.callCount(.permissions) == 2)
        rig.emulator.injectFault(.graphError(GraphErrorSpec(code: 17)), endpoint: .me, count: 1)
        let limited = await graphError {
            try await rig.client.me(fields: ["id"], accessToken: token, credentials: rig.credentials)
        }
        guard case .rateLimited(let usage, let detail) = limited else {
            Issue.record("expected rateLimited, got \(String(describing: limited))")
            return
        }
        #expect(detail.code == 17)
        #expect(usage?.highestPercent == 100)
        rig.emulator.injectFault(.malformedBody, endpoint: .debugToken, count: 5)
        let malformed = await graphError {
            try await rig.client.debugToken(inputToken: token, credentials: rig.credentials)
        }
        #expect(malformed.map(ErrorClass.init) == .transient(.malformedResponse))
        rig.emulator.resetCounters()
        rig.emulator.injectFault(.dropConnection, endpoint: .oauthAccessToken, count: 1)
        let code = try rig.emulator.authorizationCode(
            appID: rig.app.id, userID: rig.user.id, redirectURI: "https://app.example/cb"
        )
        let dropped = await graphError {
            try await rig.client.exchangeCode(
                code: code, redirectURI: "https://app.example/cb", credentials: rig.credentials)
        }
        #expect(dropped.map(ErrorClass.init) == .transient(.connectionLost))
        #expect(rig.emulator.callCount(.oauthAccessToken) == 1)
    }

    @Test("500 concurrent /me calls with 100 ms injected latency at the emulator")
    func concurrentWithLatency() async throws {
        let rig = try EmulatorRig()
        defer { rig.stop() }
        let token = try rig.token()
        rig.emulator.setLatency(.milliseconds(100), for: .me)
        let client = rig.client
        let credentials = rig.credentials
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<500 {
                group.addTask {
                    _ = try await client.me(fields: ["id", "name"], accessToken: token, credentials: credentials)
                }
            }
            try await group.waitForAll()
        }
        let elapsed = ContinuousClock.now - start
        print("GraphClient against the emulator: 500 concurrent /me calls, 100 ms latency: \(elapsed)")
        #expect(rig.emulator.callCount(.me) == 500)
        #expect(elapsed < .seconds(10))
    }
}
