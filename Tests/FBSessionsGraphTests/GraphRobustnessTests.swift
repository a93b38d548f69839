import FBSessionsCore
import FBSessionsGraph
import Foundation
import TestSupport
import Testing

/// A hostile or broken answer and the transient kind it must become.
struct BrokenAnswer: Sendable, CustomTestStringConvertible {
    let name: String
    let action: PeerAction
    let kind: GraphTransientFailure.Kind
    var testDescription: String { name }
}

@Suite("The client survives any answer: empty, huge, non-JSON, wrong types, truncated, slow")
struct GraphRobustnessTests {
    static let answers: [BrokenAnswer] = [
        BrokenAnswer(name: "empty 200", action: .respond(status: 200), kind: .malformedResponse),
        BrokenAnswer(name: "not JSON", action: .text("hello"), kind: .malformedResponse),
        BrokenAnswer(
            name: "HTML 502 page", action: .text("<html><h1>502 Bad Gateway</h1></html>", status: 502),
            kind: .serverError
        ),
        BrokenAnswer(
            name: "HTML 404 page", action: .text("<html>Not Found</html>", status: 404), kind: .malformedResponse),
        BrokenAnswer(name: "empty 503", action: .respond(status: 503), kind: .serverError),
        BrokenAnswer(
            name: "id of the wrong type", action: json(200, #"{"id":true,"name":"x"}"#), kind: .malformedResponse),
        BrokenAnswer(
            name: "name of the wrong type", action: json(200, #"{"id":"1","name":7}"#), kind: .malformedResponse),
        BrokenAnswer(name: "no id", action: json(200, #"{"name":"Jane"}"#), kind: .malformedResponse),
        BrokenAnswer(name: "a JSON array", action: json(200, "[1,2,3]"), kind: .malformedResponse),
        BrokenAnswer(name: "bare true", action: json(200, "true"), kind: .malformedResponse),
        BrokenAnswer(
            name: "error as a string", action: json(400, #"{"error":"invalid_request"}"#), kind: .malformedResponse),
        BrokenAnswer(
            name: "error code of the wrong type", action: json(400, #"{"error":{"code":{"x":1},"message":"m"}}"#),
            kind: .malformedResponse
        ),
        BrokenAnswer(name: "truncated JSON", action: json(200, #"{"id":"1","na"#), kind: .malformedResponse),
        BrokenAnswer(
            name: "invalid UTF-8", action: .respond(status: 200, body: [0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
            kind: .malformedResponse
        ),
        BrokenAnswer(
            name: "deeply nested arrays", action: json(200, String(repeating: "[", count: 100_000)),
            kind: .malformedResponse
        ),
        BrokenAnswer(
            name: "deeply nested objects",
            action: json(200, #"{"id":"1","picture":"# + String(repeating: #"{"a":"#, count: 50_000)),
            kind: .malformedResponse
        ),
        BrokenAnswer(
            name: "body shorter than Content-Length, then close",
            action: .partialBody(declaredLength: 500, sent: Array(#"{"id":"1","#.utf8)), kind: .connectionLost
        ),
        BrokenAnswer(name: "closed without a byte", action: .closeWithoutResponse, kind: .connectionLost),
        BrokenAnswer(
            name: "2 MiB body over the 1 MiB cap",
            action: json(200, #"{"id":"1","name":""# + String(repeating: "x", count: 2 << 20) + #""}"#),
            kind: .responseTooLarge
        ),
        BrokenAnswer(
            name: "chunked 2 MiB body over the cap",
            action: .respondChunked(status: 200, body: [UInt8](repeating: 0x20, count: 2 << 20)),
            kind: .responseTooLarge
        ),
        BrokenAnswer(name: "a redirect", action: .redirect(to: "https://evil.example/"), kind: .malformedResponse),
    ]

    @Test("each broken answer to /me is transient of the right kind", arguments: answers)
    func brokenAnswer(_ answer: BrokenAnswer) async throws {
        let action = answer.action
        try await withGraphPeer(retry: .none, { _ in action }) { _, client in
            let error = await graphError {
                try await client.me(
                    fields: GraphProfile.defaultFields, accessToken: Fixture.userToken,
                    credentials: Fixture.credentials
                )
            }
            #expect(error.map(ErrorClass.init) == .transient(answer.kind))
            #expect(error?.isRetryable == true)
            #expect(error?.closedReason == nil)
        }
    }

    @Test("wrong shapes on every typed call are transient(malformed_response)")
    func wrongShapes() async throws {
        let garbage = json(200, #"{"data":{"unexpected":[]}}"#)
        try await withGraphPeer(retry: .none, { _ in garbage }) { _, client in
            let calls: [() async throws -> Void] = [
                { _ = try await client.permissions(accessToken: Fixture.userToken, credentials: Fixture.credentials) },
                {
                    try await client.revokePermissions(accessToken: Fixture.userToken, credentials: Fixture.credentials)
                },
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
                {
                    _ = try await client.pictureURL(
                        size: .default, accessToken: Fixture.userToken, credentials: Fixture.credentials
                    )
                },
                {
                    _ = try await client.debugToken(inputToken: Fixture.userToken, credentials: Fixture.credentials)
                },
            ]
            for call in calls {
                let error = await graphError(call)
                #expect(error.map(ErrorClass.init) == .transient(.malformedResponse))
            }
        }
        try await withGraphPeer(retry: .none, { _ in .text("<html>") }) { _, client in
            let error = await graphError {
                try await client.get(
                    path: "me/accounts", query: [], authentication: .app, credentials: Fixture.credentials)
            }
            #expect(error.map(ErrorClass.init) == .transient(.malformedResponse))
        }
    }

    @Test("a bare 429 (from a proxy) is a rate limit and is not retried")
    func bare429() async throws {
        try await withGraphPeer({ _ in .text("Too Many Requests", status: 429) }) { peer, client in
            let error = await graphError {
                try await client.me(fields: ["id"], accessToken: Fixture.userToken, credentials: Fixture.credentials)
            }
            #expect(error.map(ErrorClass.init) == .rateLimited)
            #expect(peer.requestCount == 1)
        }
    }

    @Test("a slowloris peer that trickles its answer times out as transient(timeout)")
    func slowloris() async throws {
        let peer = try TricklePeer(interval: 0.05)
        defer { peer.stop() }
        let client = try GraphClient(
            configuration: .init(baseURL: peer.baseURL, timeout: .milliseconds(800), allowsPlainHTTP: true)
        )
        defer { client.shutdown() }
        let start = ContinuousClock.now
        let error = await graphError {
            try await client.me(fields: ["id"], accessToken: Fixture.userToken, credentials: Fixture.credentials)
        }
        let elapsed = ContinuousClock.now - start
        #expect(error.map(ErrorClass.init) == .transient(.timeout))
        #expect(elapsed < .seconds(5))
    }

    @Test("a revocation that answers false is other; true and {\"success\":true} both succeed")
    func revocationAnswers() async throws {
        for body in ["true", #"{"success":true}"#] {
            try await withGraphPeer({ _ in json(200, body) }) { _, client in
                try await client.revokePermissions(accessToken: Fixture.userToken, credentials: Fixture.credentials)
            }
        }
        for body in ["false", #"{"success":false}"#] {
            try await withGraphPeer({ _ in json(200, body) }) { peer, client in
                let error = await graphError {
                    try await client.revokePermissions(accessToken: Fixture.userToken, credentials: Fixture.credentials)
                }
                #expect(error.map(ErrorClass.init) == .other)
                #expect(peer.requestCount == 1)
            }
        }
    }
}
