import HTTPClient
import TestSupport
import Testing

@Suite("Client failures")
struct ClientFailureTests {
    @Test("a peer that never answers times out after the request's timeout")
    func timeout() async throws {
        try await withScriptedPeer({ _ in .hang }) { peer, client in
            let start = ContinuousClock.now
            let error = await #expect(throws: ClientError.self) {
                try await client.execute(ClientRequest(url: "\(peer.baseURL)/slow", timeout: .milliseconds(500)))
            }
            let elapsed = ContinuousClock.now - start
            #expect(error?.code == .timeout)
            #expect(elapsed >= .milliseconds(450))
            #expect(elapsed < .seconds(5))
            let closed = try await pollUntil { peer.openConnectionCount == 0 }
            #expect(closed)
        }
    }

    @Test("a refused connection is connectFailed")
    func connectRefused() async throws {
        let port = try refusedPort()
        let client = try Client()
        defer { client.shutdown() }
        let error = await #expect(throws: ClientError.self) {
            try await client.execute(ClientRequest(url: "http://127.0.0.1:\(port)/"))
        }
        #expect(error?.code == .connectFailed)
    }

    @Test("error descriptions never contain the query string or user info")
    func noSecretsInErrors() async throws {
        let port = try refusedPort()
        let client = try Client()
        defer { client.shutdown() }
        let url = "http://user:PASSWORD9@127.0.0.1:\(port)/v21.0/me?access_token=SECRET123&appsecret_proof=PROOF7"
        let error = await #expect(throws: ClientError.self) {
            try await client.execute(ClientRequest(url: url, headers: [("Authorization", "Bearer HEADERSECRET")]))
        }
        let error2 = try #require(error)
        let renderings = [
            String(describing: error2), String(reflecting: error2), "\(error2)", error2.debugDescription,
            error2.localizedDescription,
        ]
        for text in renderings {
            for secret in ["SECRET123", "PROOF7", "PASSWORD9", "HEADERSECRET", "access_token"] {
                #expect(!text.contains(secret), "\(text) leaks \(secret)")
            }
        }
        #expect(String(describing: error2) == "ClientError.connectFailed")
        #expect(error2.debugDescription.contains("127.0.0.1:\(port)/v21.0/me"))
    }

    @Test("a body over maxResponseBytes fails, with Content-Length")
    func tooLargeWithLength() async throws {
        let body = [UInt8](repeating: 0x41, count: 5000)
        try await withScriptedPeer(
            configuration: .init(maxResponseBytes: 1000), { _ in .respond(status: 200, body: body) }
        ) {
            peer, client in
            let error = await #expect(throws: ClientError.self) {
                try await client.execute(ClientRequest(url: peer.baseURL))
            }
            #expect(error?.code == .responseTooLarge)
            let exact = try await client.execute(ClientRequest(url: peer.baseURL, maxResponseBytes: 5000))
            #expect(exact.body.count == 5000)
        }
    }

    @Test("a body over maxResponseBytes fails, chunked without Content-Length")
    func tooLargeChunked() async throws {
        let body = [UInt8](repeating: 0x42, count: 50_000)
        try await withScriptedPeer({ _ in .respondChunked(status: 200, body: body) }) { peer, client in
            let error = await #expect(throws: ClientError.self) {
                try await client.execute(ClientRequest(url: peer.baseURL, maxResponseBytes: 10_000))
            }
            #expect(error?.code == .responseTooLarge)
            let exact = try await client.execute(ClientRequest(url: peer.baseURL, maxResponseBytes: 50_000))
            #expect(exact.body == body)
        }
    }

    @Test("an announced Content-Length over the limit aborts before the body arrives")
    func tooLargeAnnounced() async throws {
        let script: @Sendable (PeerRequest) -> PeerAction = { _ in
            .partialBody(declaredLength: 100_000_000, sent: Array("tiny".utf8))
        }
        try await withScriptedPeer(configuration: .init(maxResponseBytes: 1024 * 1024), script) { peer, client in
            let error = await #expect(throws: ClientError.self) {
                try await client.execute(ClientRequest(url: peer.baseURL))
            }
            #expect(error?.code == .responseTooLarge)
        }
    }

    @Test("a truncated body or a closed connection is a transport error", arguments: [true, false])
    func truncated(partial: Bool) async throws {
        let action: PeerAction =
            partial ? .partialBody(declaredLength: 100, sent: Array("ten bytes!".utf8)) : .closeWithoutResponse
        try await withScriptedPeer({ _ in action }) { peer, client in
            let error = await #expect(throws: ClientError.self) {
                try await client.execute(ClientRequest(url: peer.baseURL))
            }
            #expect(error?.code == .transport)
        }
    }

    @Test("a disallowed scheme fails before any connection", arguments: ["ftp", "http"])
    func disallowedScheme(scheme: String) async throws {
        try await withScriptedPeer(configuration: .init(allowedSchemes: ["https"]), echoScript) { peer, client in
            let error = await #expect(throws: ClientError.self) {
                try await client.execute(ClientRequest(url: "\(scheme)://127.0.0.1:\(peer.port)/file?token=T0KEN"))
            }
            #expect(error?.code == .disallowedScheme)
            #expect(error.map { String(reflecting: $0).contains("T0KEN") } == false)
            #expect(peer.connectionCount == 0)
        }
    }

    @Test("ftp is refused by the default configuration too, and so are odd schemes")
    func defaultSchemes() async throws {
        try await withScriptedPeer(echoScript) { peer, client in
            for url in ["ftp://127.0.0.1:\(peer.port)/", "file:///etc/passwd", "gopher://127.0.0.1:\(peer.port)/"] {
                let error = await #expect(throws: ClientError.self) {
                    try await client.execute(ClientRequest(url: url))
                }
                #expect(error?.code == .disallowedScheme)
            }
            #expect(peer.connectionCount == 0)
        }
    }

    @Test("a followed redirect to a disallowed scheme fails")
    func redirectToDisallowedScheme() async throws {
        let script: @Sendable (PeerRequest) -> PeerAction = { _ in .redirect(to: "ftp://127.0.0.1:1/file") }
        try await withScriptedPeer(configuration: .init(followRedirects: true), script) { peer, client in
            let error = await #expect(throws: ClientError.self) {
                try await client.execute(ClientRequest(url: peer.baseURL))
            }
            #expect(error?.code == .disallowedScheme)
            #expect(peer.requestCount == 1)
        }
    }

    @Test("malformed URLs, methods and headers fail before any connection")
    func malformedRequests() async throws {
        try await withScriptedPeer(echoScript) { peer, client in
            for url in ["not a url", "http://", "127.0.0.1/no-scheme", ""] {
                let error = await #expect(throws: ClientError.self) {
                    try await client.execute(ClientRequest(url: url))
                }
                #expect(error?.code == .invalidURL, "\(url)")
            }
            let badHeaders: [[(String, String)]] = [
                [("X-Evil", "a\r\nInjected: 1")], [("Bad Name", "x")], [("", "x")], [("X-Nul", "a\0b")],
            ]
            for headers in badHeaders {
                let error = await #expect(throws: ClientError.self) {
                    try await client.execute(ClientRequest(url: peer.baseURL, headers: headers))
                }
                #expect(error?.code == .invalidRequest)
            }
            let error = await #expect(throws: ClientError.self) {
                try await client.execute(ClientRequest(method: "GET /x HTTP/1.1\r\n", url: peer.baseURL))
            }
            #expect(error?.code == .invalidRequest)
            #expect(peer.connectionCount == 0)
        }
    }
}
