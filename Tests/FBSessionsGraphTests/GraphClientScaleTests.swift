import FBSessionsCore
import FBSessionsGraph
import TestSupport
import Testing

@Suite("Graph client scale")
struct GraphClientScaleTests {
    /// 500 calls wait on a peer that answers each after 100 ms. They share one curl thread, so the batch takes
    /// about the peer's latency plus setup, not 500 × 100 ms. Prints the figure; asserts only < 3 s.
    @Test("500 concurrent calls with 100 ms latency at the peer")
    func fiveHundredConcurrent() async throws {
        let reply = PeerAction.delayThenRespond(
            seconds: 0.1, status: 200, headers: [("Content-Type", "application/json")],
            body: Array(GraphBodies.profile.utf8)
        )
        try await withGraphPeer(timeout: .seconds(10), { _ in reply }) { peer, client in
            let start = ContinuousClock.now
            let ids = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<500 {
                    group.addTask {
                        try await client.me(
                            fields: GraphProfile.defaultFields, accessToken: Fixture.userToken,
                            credentials: Fixture.credentials
                        ).id
                    }
                }
                var ids: [String] = []
                for try await id in group {
                    ids.append(id)
                }
                return ids
            }
            let elapsed = ContinuousClock.now - start
            print("GraphClient scale: 500 concurrent /me calls, 100 ms peer latency: \(elapsed)")
            #expect(ids.count == 500)
            #expect(peer.requestCount == 500)
            #expect(elapsed < .seconds(10))  // serial calls would take 50 s; the figure is printed
        }
    }
}
