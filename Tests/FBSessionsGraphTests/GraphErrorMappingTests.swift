import FBSessionsCore
import FBSessionsGraph
import Testing

/// One Graph answer and the error class it must become.
struct ErrorCase: Sendable, CustomTestStringConvertible {
    let name: String
    let status: Int
    let body: String
    let expected: ErrorClass
    var testDescription: String { "\(name) → \(expected)" }
}

@Suite("Graph errors map to typed errors (docs/facebook-graph.md §7 bodies over HTTP)")
struct GraphErrorMappingTests {
    static let userCallCases: [ErrorCase] = [
        ErrorCase(name: "190/463", status: 400, body: GraphBodies.expired, expected: .invalidToken(.tokenExpired)),
        ErrorCase(
            name: "190/460", status: 400, body: GraphBodies.passwordChanged, expected: .invalidToken(.passwordChanged)
        ),
        ErrorCase(name: "190/458", status: 400, body: GraphBodies.appRemoved, expected: .invalidToken(.appRemoved)),
        ErrorCase(name: "190/459", status: 400, body: GraphBodies.checkpoint, expected: .invalidToken(.checkpoint)),
        ErrorCase(
            name: "190/464", status: 400, body: GraphBodies.unconfirmed, expected: .invalidToken(.userUnconfirmed)
        ),
        ErrorCase(name: "190/466", status: 400, body: GraphBodies.revoked, expected: .invalidToken(.revoked)),
        ErrorCase(name: "190/467", status: 400, body: GraphBodies.loggedOut, expected: .invalidToken(.tokenInvalid)),
        ErrorCase(
            name: "190 unparseable", status: 400, body: GraphBodies.malformedToken,
            expected: .invalidToken(.tokenInvalid)
        ),
        ErrorCase(
            name: "190 expired without subcode", status: 400, body: GraphBodies.expiredWithoutSubcode,
            expected: .invalidToken(.tokenInvalid)
        ),
        ErrorCase(name: "102", status: 400, body: GraphBodies.apiSession, expected: .invalidToken(.tokenInvalid)),
        ErrorCase(
            name: "OAuthException without code", status: 400, body: GraphBodies.oauthNoCode,
            expected: .invalidToken(.tokenInvalid)
        ),
        ErrorCase(name: "190/493", status: 400, body: GraphBodies.dataAccessExpired, expected: .dataAccessExpired),
        ErrorCase(
            name: "493 text without subcode", status: 400, body: GraphBodies.dataAccessExpiredWithoutSubcode,
            expected: .dataAccessExpired
        ),
        ErrorCase(name: "200", status: 403, body: GraphBodies.permission200, expected: .permissionMissing),
        ErrorCase(name: "10", status: 400, body: GraphBodies.permission10, expected: .permissionMissing),
        ErrorCase(name: "4", status: 400, body: GraphBodies.rate4, expected: .rateLimited),
        ErrorCase(name: "17 is_transient", status: 400, body: GraphBodies.rate17, expected: .rateLimited),
        ErrorCase(name: "32", status: 400, body: GraphBodies.rate32, expected: .rateLimited),
        ErrorCase(name: "613/1996", status: 400, body: GraphBodies.rate613, expected: .rateLimited),
        ErrorCase(name: "341", status: 400, body: GraphBodies.rate341, expected: .rateLimited),
        ErrorCase(name: "1", status: 500, body: GraphBodies.unknown1, expected: .transient(.graphError)),
        ErrorCase(name: "2 is_transient", status: 500, body: GraphBodies.service2, expected: .transient(.graphError)),
        ErrorCase(name: "1 on HTTP 400", status: 400, body: GraphBodies.unknown1, expected: .transient(.graphError)),
        ErrorCase(name: "100 unknown field", status: 400, body: GraphBodies.unknownField, expected: .other),
        ErrorCase(name: "100/33 GraphMethodException", status: 400, body: GraphBodies.unsupportedGet, expected: .other),
        ErrorCase(name: "proof missing", status: 400, body: GraphBodies.proofMissing, expected: .other),
        ErrorCase(name: "proof invalid", status: 400, body: GraphBodies.proofInvalid, expected: .other),
        ErrorCase(name: "2500 no token", status: 400, body: GraphBodies.noToken, expected: .other),
        ErrorCase(name: "368 blocked", status: 400, body: GraphBodies.blocked368, expected: .other),
        ErrorCase(name: "100 on a 500", status: 500, body: GraphBodies.unknownField, expected: .transient(.graphError)),
    ]

    @Test("on /me", arguments: userCallCases)
    func me(_ errorCase: ErrorCase) async throws {
        let reply = json(errorCase.status, errorCase.body)
        try await withGraphPeer(retry: .none, { _ in reply }) { _, client in
            let error = await graphError {
                try await client.me(
                    fields: GraphProfile.defaultFields, accessToken: Fixture.userToken,
                    credentials: Fixture.credentials
                )
            }
            let thrown = try #require(error)
            #expect(ErrorClass(thrown) == errorCase.expected)
            #expect(thrown.detail?.httpStatus == errorCase.status)
        }
    }

    @Test("details carry code, subcode, type, message and fbtrace_id exactly")
    func detailFields() async throws {
        try await withGraphPeer({ _ in json(400, GraphBodies.expired) }) { _, client in
            let error = await graphError {
                try await client.permissions(accessToken: Fixture.userToken, credentials: Fixture.credentials)
            }
            guard case .invalidToken(let reason, let detail) = error else {
                Issue.record("expected invalidToken, got \(String(describing: error))")
                return
            }
            #expect(reason == .tokenExpired)
            #expect(detail.code == 190)
            #expect(detail.subcode == 463)
            #expect(detail.type == "OAuthException")
            #expect(detail.fbtraceID == "AbCdEfGh123")
            #expect(
                detail.message == "Error validating access token: Session has expired on Thursday, 06-Oct-22 "
                    + "00:00:00 PDT. The current time is Tuesday, 22-Nov-22 19:54:40 PST."
            )
            #expect(error?.closedReason == .tokenExpired)
            #expect(error?.isRetryable == false)
        }
    }

    @Test("a rate limit carries what x-app-usage said")
    func rateLimitUsage() async throws {
        let usage = ("x-app-usage", #"{"call_count":100,"total_cputime":25,"total_time":97}"#)
        try await withGraphPeer({ _ in json(400, GraphBodies.rate4, headers: [usage]) }) { _, client in
            let error = await graphError {
                try await client.me(fields: ["id"], accessToken: Fixture.userToken, credentials: Fixture.credentials)
            }
            guard case .rateLimited(let appUsage, let detail) = error else {
                Issue.record("expected rateLimited, got \(String(describing: error))")
                return
            }
            #expect(appUsage == GraphAppUsage(callCount: 100, totalTime: 97, totalCPUTime: 25))
            #expect(appUsage?.highestPercent == 100)
            #expect(detail.code == 4)
            #expect(error?.isRetryable == true)
        }
    }

    @Test("code exchange errors are other, including code 1 (a wrong client secret)")
    func codeExchangeErrors() async throws {
        for body in [GraphBodies.codeReused, GraphBodies.redirectMismatch, GraphBodies.badClientSecret] {
            try await withGraphPeer({ _ in json(400, body) }) { peer, client in
                let error = await graphError {
                    try await client.exchangeCode(
                        code: Fixture.code, redirectURI: "https://app.example/cb", credentials: Fixture.credentials
                    )
                }
                #expect(error.map(ErrorClass.init) == .other, "\(body)")
                #expect(peer.requestCount == 1)
            }
        }
    }

    @Test("the long-lived exchange of an expired token is invalidToken(token_expired)")
    func longLivedExpired() async throws {
        try await withGraphPeer({ _ in json(400, GraphBodies.expired) }) { _, client in
            let error = await graphError {
                try await client.exchangeForLongLivedToken(
                    accessToken: Fixture.userToken, credentials: Fixture.credentials
                )
            }
            #expect(error?.closedReason == .tokenExpired)
        }
    }
}
