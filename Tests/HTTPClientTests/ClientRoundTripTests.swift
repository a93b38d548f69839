import HTTPClient
import TestSupport
import Testing

@Suite("Client round trips")
struct ClientRoundTripTests {
    @Test("GET, POST and DELETE carry method, path, headers and body", arguments: ["GET", "POST", "DELETE"])
    func roundTrip(method: String) async throws {
        try await withScriptedPeer(echoScript) { peer, client in
            let body: [UInt8]? = method == "GET" ? nil : Array("{\"hello\":\"wörld\"}".utf8)
            let response = try await client.execute(
                ClientRequest(
                    method: method,
                    url: "\(peer.baseURL)/v1/things?x=1&y=two",
                    headers: [("X-Test", "value with spaces"), ("Content-Type", "application/json")],
                    body: body
                )
            )
            #expect(response.status == 200)
            #expect(response.header("x-method") == method)
            #expect(response.header("X-PATH") == "/v1/things?x=1&y=two")
            #expect(response.header("X-Echo") == "value with spaces")
            #expect(response.header("x-user-agent") == "fbsessiond")
            #expect(response.body == (body ?? []))
            #expect(response.effectiveURL == "\(peer.baseURL)/v1/things?x=1&y=two")
        }
    }

    @Test("a handler's task goes on on the transfer loop's thread that finished its call")
    func inlineCallerGoesOnOnTheLoop() async throws {
        try await withScriptedPeer(echoScript) { peer, client in
            let (response, resumedOn) = try await threadAfterInlineAwait {
                try await client.execute(ClientRequest(method: "GET", url: "\(peer.baseURL)/inline"))
            }
            #expect(response.status == 200)
            #expect(resumedOn == "http-client")
        }
    }

    @Test("a large POST body is sent at once, without Expect: 100-continue")
    func largeBody() async throws {
        try await withScriptedPeer(echoScript) { peer, client in
            let body = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
            let response = try await client.execute(ClientRequest(method: "PUT", url: peer.baseURL, body: body))
            #expect(response.header("x-method") == "PUT")
            #expect(response.header("x-expect") == "none")
            #expect(response.body == body)
        }
    }

    @Test("response headers keep order and duplicates, names lowercased")
    func responseHeaders() async throws {
        let script: @Sendable (PeerRequest) -> PeerAction = { _ in
            .respond(
                status: 201,
                headers: [("Set-Cookie", "a=1"), ("X-Other", "Value"), ("Set-Cookie", "b=2"), ("ETag", "\"v1\"")],
                body: Array("created".utf8)
            )
        }
        try await withScriptedPeer(script) { peer, client in
            let response = try await client.execute(ClientRequest(url: peer.baseURL))
            #expect(response.status == 201)
            #expect(response.headers(named: "SET-COOKIE") == ["a=1", "b=2"])
            #expect(response.header("set-cookie") == "a=1")
            #expect(response.header("etag") == "\"v1\"")
            #expect(response.header("content-length") == "7")
            #expect(response.headers.allSatisfy { $0.0 == $0.0.lowercased() })
            let names = response.headers.map(\.0)
            #expect(names.firstIndex(of: "set-cookie") ?? 99 < names.firstIndex(of: "etag") ?? 0)
            #expect(response.bodyText == "created")
            #expect(response.header("missing") == nil)
        }
    }

    @Test("404 and 500 are responses, not errors", arguments: [404, 500, 503])
    func errorStatuses(status: Int) async throws {
        try await withScriptedPeer({ _ in .respond(status: status, body: Array("{\"error\":1}".utf8)) }) {
            peer, client in
            let response = try await client.execute(ClientRequest(url: "\(peer.baseURL)/missing"))
            #expect(response.status == status)
            #expect(response.bodyText == "{\"error\":1}")
        }
    }

    @Test("chunked responses are reassembled")
    func chunked() async throws {
        let body = (0..<50_000).map { UInt8(truncatingIfNeeded: $0) }
        try await withScriptedPeer({ _ in .respondChunked(status: 200, body: body) }) { peer, client in
            let response = try await client.execute(ClientRequest(url: peer.baseURL))
            #expect(response.body == body)
            #expect(response.header("transfer-encoding") == "chunked")
        }
    }

    @Test("sequential requests reuse one keep-alive connection")
    func keepAlive() async throws {
        try await withScriptedPeer(echoScript) { peer, client in
            for index in 0..<3 {
                let response = try await client.execute(ClientRequest(url: "\(peer.baseURL)/\(index)"))
                #expect(response.header("x-path") == "/\(index)")
            }
            #expect(peer.requestCount == 3)
            #expect(peer.connectionCount == 1)
        }
    }

    @Test("redirects are returned, not followed, by default")
    func redirectNotFollowed() async throws {
        let script: @Sendable (PeerRequest) -> PeerAction = { request in
            request.path == "/start" ? .redirect(to: "/target") : .text("arrived")
        }
        try await withScriptedPeer(script) { peer, client in
            let response = try await client.execute(ClientRequest(url: "\(peer.baseURL)/start"))
            #expect(response.status == 302)
            #expect(response.header("location") == "/target")
            #expect(peer.requestCount == 1)
        }
    }

    @Test("redirects are followed when configured, keeping only the final headers")
    func redirectFollowed() async throws {
        let script: @Sendable (PeerRequest) -> PeerAction = { request in
            request.path == "/start" ? .redirect(to: "/target") : .text("arrived")
        }
        try await withScriptedPeer(configuration: .init(followRedirects: true), script) { peer, client in
            let response = try await client.execute(ClientRequest(url: "\(peer.baseURL)/start"))
            #expect(response.status == 200)
            #expect(response.bodyText == "arrived")
            #expect(response.header("location") == nil)
            #expect(response.effectiveURL == "\(peer.baseURL)/target")
        }
    }

    @Test("HEAD ignores a Content-Length beyond the size limit")
    func headIgnoresLength() async throws {
        let script: @Sendable (PeerRequest) -> PeerAction = { _ in
            .respond(status: 200, headers: [("Content-Length", "999999")], body: [])
        }
        try await withScriptedPeer(script) { peer, client in
            let response = try await client.execute(
                ClientRequest(method: "HEAD", url: peer.baseURL, maxResponseBytes: 10)
            )
            #expect(response.status == 200)
            #expect(response.body.isEmpty)
        }
    }
}
