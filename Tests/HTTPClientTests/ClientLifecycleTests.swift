import HTTPClient
import TestSupport
import Testing

@Suite("Client cancellation and shutdown")
struct ClientLifecycleTests {
    @Test("cancelling the task aborts a transfer in flight")
    func cancelInFlight() async throws {
        try await withScriptedPeer({ _ in .hang }) { peer, client in
            let task = Task { try await client.execute(ClientRequest(url: "\(peer.baseURL)/hang")) }
            let arrived = try await pollUntil { peer.requestCount == 1 }
            #expect(arrived)
            let start = ContinuousClock.now
            task.cancel()
            let result = await task.result
            #expect(ContinuousClock.now - start < .seconds(3))
            #expect(throws: ClientError.self) { try result.get() }
            #expect((result.failureError as? ClientError)?.code == .cancelled)
            // The transfer left libcurl: its connection is closed, so the peer's hanging thread sees end of stream.
            let closed = try await pollUntil { peer.openConnectionCount == 0 }
            #expect(closed)
        }
    }

    @Test("an already-cancelled task fails at once, without a connection")
    func cancelledBeforeStart() async throws {
        try await withScriptedPeer(echoScript) { peer, client in
            let task = Task {
                while !Task.isCancelled {
                    await Task.yield()
                }
                return try await client.execute(ClientRequest(url: peer.baseURL))
            }
            task.cancel()
            let result = await task.result
            #expect((result.failureError as? ClientError)?.code == .cancelled)
            #expect(peer.connectionCount == 0)
        }
    }

    @Test("shutdown fails pending transfers, later calls fail, and it is idempotent")
    func shutdown() async throws {
        let peer = try ScriptedPeer { _ in .hang }
        defer { peer.stop() }
        let client = try Client()
        let task = Task { try await client.execute(ClientRequest(url: peer.baseURL)) }
        let arrived = try await pollUntil { peer.requestCount == 1 }
        #expect(arrived)
        client.shutdown()
        let result = await task.result
        #expect((result.failureError as? ClientError)?.code == .shutdown)
        let error = await #expect(throws: ClientError.self) {
            try await client.execute(ClientRequest(url: peer.baseURL))
        }
        #expect(error?.code == .shutdown)
        client.shutdown()
    }

    @Test("a client released without shutdown stops its thread")
    func releaseWithoutShutdown() async throws {
        try await withScriptedPeer(echoScript) { peer, _ in
            for _ in 0..<20 {
                let client = try Client()
                let response = try await client.execute(ClientRequest(url: peer.baseURL))
                #expect(response.status == 200)
            }
        }
    }
}

extension Result {
    var failureError: Failure? {
        if case .failure(let error) = self {
            return error
        }
        return nil
    }
}
