import FBSessionsCore
import FBSessionsGraph
import Foundation
import Support
import TestSupport
import Testing

@Suite("No token, secret, proof or code in any error, log record or description")
struct GraphSecrecyTests {
    /// Echoes the request target (query included) into every free-text field of a Graph error.
    @Sendable static func echo(_ request: PeerRequest) -> PeerAction {
        let target = request.path.replacingOccurrences(of: "\"", with: "")
        let body =
            #"{"error":{"message":"bad request \#(target)","type":"OAuthException \#(target)","code":100,"#
            + #""error_user_title":"\#(target)","error_user_msg":"\#(target)","fbtrace_id":"\#(target)"}}"#
        return json(400, body)
    }

    @Test("a server that echoes the request into its error text leaks nothing through the error")
    func echoedRequest() async throws {
        try await withGraphPeer({ Self.echo($0) }) { _, client in
            let calls: [() async throws -> Void] = [
                {
                    _ = try await client.me(
                        fields: ["id"], accessToken: Fixture.userToken, credentials: Fixture.credentials)
                },
                { _ = try await client.debugToken(inputToken: Fixture.userToken, credentials: Fixture.credentials) },
                {
                    _ = try await client.exchangeCode(
                        code: Fixture.code, redirectURI: "https://a.example/", credentials: Fixture.credentials
                    )
                },
                {
                    _ = try await client.exchangeForLongLivedToken(
                        accessToken: Fixture.userToken, credentials: Fixture.credentials
                    )
                },
            ]
            for call in calls {
                let error = try #require(await graphError(call))
                #expect(leakedSecret(in: error) == nil, "\(String(reflecting: error))")
                #expect(error.detail?.message.contains("<redacted>") == true)
            }
        }
    }

    @Test("an error text that quotes a secret in another form (a foreign query parameter) is scrubbed")
    func foreignParameter() async throws {
        let body =
            #"{"error":{"message":"see https://x.example/?code=ZZSECRETZZ&access_token=YYSECRETYY ok","code":100}}"#
        try await withGraphPeer({ _ in json(400, body) }) { _, client in
            let error = try #require(
                await graphError {
                    try await client.permissions(accessToken: Fixture.userToken, credentials: Fixture.credentials)
                })
            #expect(leakedSecret(in: error, extra: ["ZZSECRETZZ", "YYSECRETYY"]) == nil)
            #expect(error.detail?.message.hasSuffix(" ok") == true)
        }
    }

    @Test("transport failures (refused, timeout, truncated) and their retries leak nothing, in errors or logs")
    func transportFailuresAndLogs() async throws {
        let records = InMemoryLogHandler()
        let logger = Logger(label: "test.graph", level: .debug, handler: records)
        for action in [PeerAction.hang, .closeWithoutResponse, .partialBody(declaredLength: 99, sent: [0x7b])] {
            try await withGraphPeer(
                timeout: .seconds(2), attemptTimeout: .milliseconds(200), logger: logger, { _ in action }
            ) { _, client in
                let error = try #require(
                    await graphError {
                        try await client.me(
                            fields: ["id"], accessToken: Fixture.userToken, credentials: Fixture.credentials
                        )
                    })
                #expect(leakedSecret(in: error) == nil)
            }
        }
        try await withGraphPeer(logger: logger, { _ in json(400, GraphBodies.rate4) }) { _, client in
            _ = await graphError {
                try await client.me(fields: ["id"], accessToken: Fixture.userToken, credentials: Fixture.credentials)
            }
        }
        #expect(records.records.contains { $0.message == "graph call failed; retrying" })
        #expect(records.records.contains { $0.level == .warning && $0.message == "graph rate limit reached" })
        for record in records.records {
            #expect(leakedSecret(in: record.jsonLine) == nil, "\(record.jsonLine)")
        }
    }

    @Test("credentials, grants and authentication values describe themselves without secrets")
    func valueDescriptions() {
        let grant = GraphTokenGrant(accessToken: Fixture.userToken, tokenType: "bearer", expiresIn: 60)
        let values: [Any] = [
            Fixture.credentials, grant, GraphAuthentication.user(accessToken: Fixture.userToken),
            GraphError.transient(GraphTransientFailure(.timeout)),
        ]
        for value in values {
            #expect(leakedSecret(in: value) == nil, "\(value)")
        }
        #expect("\(grant)".contains("expiresIn: 60"))
        #expect("\(Fixture.credentials)".contains(Fixture.appID))
    }
}
