import HTTPClient
import TestSupport
import Testing

@Suite("Client scale")
struct ClientScaleTests {
    /// A thousand requests wait on a peer that takes one second each. They all wait at once on the one transfer
    /// thread, so the whole batch takes about one second, not a thousand.
    @Test("1,000 concurrent requests to a 1 s peer finish together")
    func thousandConcurrent() async throws {
        let reply: PeerAction = .delayThenRespond(seconds: 1, status: 200, body: Array("ok".utf8))
        try await withScriptedPeer({ _ in reply }) { peer, client in
            let start = ContinuousClock.now
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<1000 {
                    group.addTask {
                        try await client.execute(ClientRequest(url: "\(peer.baseURL)/slow/\(index)")).status
                    }
                }
                var statuses: [Int] = []
                for try await status in group {
                    statuses.append(status)
                }
                return statuses
            }
            let elapsed = ContinuousClock.now - start
            print("HTTPClient scale: 1,000 concurrent requests to a 1 s peer took \(elapsed)")
            #expect(statuses.count == 1000)
            #expect(statuses.allSatisfy { $0 == 200 })
            #expect(peer.requestCount == 1000)
            #expect(elapsed < .seconds(10))  // serial transfers would take minutes; the figure is printed
        }
    }

    @Test("maxConnectionsPerHost queues transfers beyond the limit")
    func perHostLimit() async throws {
        let reply: PeerAction = .delayThenRespond(seconds: 0.3, status: 200, body: [])
        try await withScriptedPeer(configuration: .init(maxConnectionsPerHost: 2), { _ in reply }) { peer, client in
            let start = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<6 {
                    group.addTask { _ = try await client.execute(ClientRequest(url: peer.baseURL)) }
                }
                try await group.waitForAll()
            }
            let elapsed = ContinuousClock.now - start
            #expect(peer.requestCount == 6)
            #expect(peer.connectionCount <= 2)
            #expect(elapsed >= .milliseconds(850))
        }
    }
}
