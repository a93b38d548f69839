import FBSessionsCore
import FBSessionsGraph
import TestSupport
import Testing

@Suite("Retries happen only where they should (the peer's requestCount proves it)")
struct GraphRetryTests {
    private let server500 = json(
        500, #"{"error":{"message":"An unknown error has occurred.","type":"OAuthException","code":1}}"#)

    @Test("a transient 500 is retried, then the success is returned")
    func retriedThenSuccess() async throws {
        let script = PeerScript([server500, server500, json(200, GraphBodies.profile)])
        try await withGraphPeer({ script.next($0) }) { peer, client in
            let profile = try await client.me(
                fields: GraphProfile.defaultFields, accessToken: Fixture.userToken, credentials: Fixture.credentials
            )
            #expect(profile.id == "10215241773831025")
            #expect(peer.requestCount == 3)
        }
    }

    @Test("a transient failure is retried up to maxAttempts, then surfaced with the attempt count")
    func retriedUpToLimit() async throws {
        let bare500 = PeerAction.text("<html><body>Internal Server Error</body></html>", status: 500)
        try await withGraphPeer({ _ in bare500 }) { peer, client in
            let error = await graphError {
                try await client.permissions(accessToken: Fixture.userToken, credentials: Fixture.credentials)
            }
            guard case .transient(let failure) = error else {
                Issue.record("expected transient, got \(String(describing: error))")
                return
            }
            #expect(failure.kind == .serverError)
            #expect(failure.httpStatus == 500)
            #expect(failure.attempts == 3)
            #expect(peer.requestCount == 3)
        }
    }

    @Test(
        "invalid tokens, data-access expiry, permissions, rate limits and other errors are never retried",
        arguments: [
            GraphBodies.expired, GraphBodies.loggedOut, GraphBodies.malformedToken, GraphBodies.dataAccessExpired,
            GraphBodies.permission200, GraphBodies.rate4, GraphBodies.rate17, GraphBodies.rate613,
            GraphBodies.rate32, GraphBodies.unknownField,
        ]
    )
    func notRetried(_ body: String) async throws {
        try await withGraphPeer({ _ in json(400, body) }) { peer, client in
            let error = await graphError {
                try await client.me(fields: ["id"], accessToken: Fixture.userToken, credentials: Fixture.credentials)
            }
            #expect(error != nil)
            #expect(error?.isRetryable == false || error.map(ErrorClass.init) == .rateLimited)
            #expect(peer.requestCount == 1)
        }
    }

    @Test("a dropped connection is retried for a read but not for the single-use code exchange")
    func droppedConnection() async throws {
        try await withGraphPeer({ _ in .closeWithoutResponse }) { peer, client in
            let read = await graphError {
                try await client.me(fields: ["id"], accessToken: Fixture.userToken, credentials: Fixture.credentials)
            }
            #expect(read.map(ErrorClass.init) == .transient(.connectionLost))
            #expect(peer.requestCount == 3)
        }
        try await withGraphPeer({ _ in .closeWithoutResponse }) { peer, client in
            let exchange = await graphError {
                try await client.exchangeCode(
                    code: Fixture.code, redirectURI: "https://app.example/cb", credentials: Fixture.credentials
                )
            }
            #expect(exchange.map(ErrorClass.init) == .transient(.connectionLost))
            #expect(peer.requestCount == 1)
        }
    }

    @Test("a single-use call never rides a pooled connection, so libcurl cannot silently re-send it")
    func singleUseFreshConnection() async throws {
        let script = PeerScript([
            json(200, GraphBodies.profile), .closeWithoutResponse, json(200, GraphBodies.codeGrant),
        ])
        try await withGraphPeer({ script.next($0) }) { peer, client in
            _ = try await client.me(fields: ["id"], accessToken: Fixture.userToken, credentials: Fixture.credentials)
            let exchange = await graphError {
                try await client.exchangeCode(
                    code: Fixture.code, redirectURI: "https://app.example/cb", credentials: Fixture.credentials
                )
            }
            #expect(exchange.map(ErrorClass.init) == .transient(.connectionLost))
            #expect(peer.requestCount == 2)
            #expect(peer.connectionCount == 2, "the code exchange opened a connection of its own")
        }
    }

    @Test("after an attempt times out, a read is retried but the code exchange is not")
    func timeoutAfterSending() async throws {
        let timing = (timeout: Duration.seconds(4), attempt: Duration.milliseconds(300))
        try await withGraphPeer(timeout: timing.timeout, attemptTimeout: timing.attempt, { _ in .hang }) {
            peer, client in
            let read = await graphError {
                try await client.me(fields: ["id"], accessToken: Fixture.userToken, credentials: Fixture.credentials)
            }
            #expect(read.map(ErrorClass.init) == .transient(.timeout))
            // The peer may read an abandoned attempt's request a moment after the client gave up on it.
            for _ in 0..<100 where peer.requestCount < 3 { try await Task.sleep(nanoseconds: 20_000_000) }
            #expect(peer.requestCount == 3)
        }
        try await withGraphPeer(timeout: timing.timeout, attemptTimeout: timing.attempt, { _ in .hang }) {
            peer, client in
            let start = ContinuousClock.now
            let exchange = await graphError {
                try await client.exchangeCode(
                    code: Fixture.code, redirectURI: "https://app.example/cb", credentials: Fixture.credentials
                )
            }
            #expect(exchange.map(ErrorClass.init) == .transient(.timeout))
            #expect(ContinuousClock.now - start < .seconds(5))
            try await Task.sleep(nanoseconds: 300_000_000)
            #expect(peer.requestCount == 1)
        }
    }

    @Test("the revocation is single-use too; the long-lived exchange is retried")
    func revocationAndExchange() async throws {
        try await withGraphPeer({ _ in server500 }) { peer, client in
            let error = await graphError {
                try await client.revokePermissions(accessToken: Fixture.userToken, credentials: Fixture.credentials)
            }
            #expect(error.map(ErrorClass.init) == .transient(.graphError))
            #expect(peer.requestCount == 1)
        }
        let script = PeerScript([server500, json(200, GraphBodies.longLived)])
        try await withGraphPeer({ script.next($0) }) { peer, client in
            let grant = try await client.exchangeForLongLivedToken(
                accessToken: Fixture.userToken, credentials: Fixture.credentials
            )
            #expect(grant.expiresIn == 5_183_944)
            #expect(peer.requestCount == 2)
        }
    }

    @Test("a connection that is refused is retried even for the code exchange (it never left)")
    func connectRefused() async throws {
        let peer = try ScriptedPeer { _ in .closeWithoutResponse }
        let port = peer.port
        peer.stop()
        let client = try GraphClient(
            configuration: .init(baseURL: "http://127.0.0.1:\(port)", retry: Fixture.fastRetry, allowsPlainHTTP: true)
        )
        defer { client.shutdown() }
        let error = await graphError {
            try await client.exchangeCode(
                code: Fixture.code, redirectURI: "https://app.example/cb", credentials: Fixture.credentials
            )
        }
        guard case .transient(let failure) = error else {
            Issue.record("expected transient, got \(String(describing: error))")
            return
        }
        #expect(failure.kind == .connectFailed)
        #expect(!failure.mayHaveReachedGraph)
        #expect(failure.attempts == 3)
    }

    @Test("without attemptTimeout, one timeout uses the whole call budget: no retry, answer within the timeout")
    func callBudget() async throws {
        try await withGraphPeer(timeout: .milliseconds(600), { _ in .hang }) { peer, client in
            let start = ContinuousClock.now
            let error = await graphError {
                try await client.me(fields: ["id"], accessToken: Fixture.userToken, credentials: Fixture.credentials)
            }
            let elapsed = ContinuousClock.now - start
            #expect(error.map(ErrorClass.init) == .transient(.timeout))
            #expect(peer.requestCount == 1)
            #expect(elapsed >= .milliseconds(550))
            #expect(elapsed < .milliseconds(4500))  // generous: the machine is shared; a retry would double it
        }
    }

    @Test("cancelling the task stops the call with CancellationError and no retry")
    func cancellation() async throws {
        try await withGraphPeer({ _ in .hang }) { peer, client in
            let task = Task {
                try await client.me(fields: ["id"], accessToken: Fixture.userToken, credentials: Fixture.credentials)
            }
            try await Task.sleep(for: .milliseconds(200))
            task.cancel()
            let result = await task.result
            #expect(throws: CancellationError.self) { try result.get() }
            #expect(peer.requestCount == 1)
        }
    }

    @Test("backoff delays grow exponentially, are capped, and jitter only shortens them")
    func backoff() {
        let policy = GraphClient.RetryPolicy(
            maxAttempts: 5, baseDelay: .milliseconds(100), maxDelay: .milliseconds(350), jitter: 0.5
        )
        #expect(policy.delay(afterAttempt: 1, random: 0) == .milliseconds(100))
        #expect(policy.delay(afterAttempt: 2, random: 0) == .milliseconds(200))
        #expect(policy.delay(afterAttempt: 3, random: 0) == .milliseconds(350))
        #expect(policy.delay(afterAttempt: 2, random: 1) == .milliseconds(100))
        for _ in 0..<100 {
            let delay = policy.delay(afterAttempt: 2, random: Double.random(in: 0...1))
            #expect(delay >= .milliseconds(100) && delay <= .milliseconds(200))
        }
        #expect(GraphClient.RetryPolicy.none.maxAttempts == 1)
    }
}
