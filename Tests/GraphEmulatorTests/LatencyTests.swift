import Foundation
import Testing

@testable import GraphEmulator

/// Injected latency holds no server thread: hundreds of delayed requests overlap.
@Suite("Latency injection")
struct LatencyTests {
    @Test func twoHundredConcurrentDelayedCalls() async throws {
        let harness = try Harness()
        let token = try harness.token()
        harness.emulator.setLatency(.milliseconds(100), for: .me)
        let single = ContinuousClock.now
        #expect(try await harness.send("GET", "/me?access_token=\(token)").status == 200)
        #expect(ContinuousClock.now - single >= .milliseconds(100))

        let started = ContinuousClock.now
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<200 {
                group.addTask { try await harness.send("GET", "/v21.0/me?access_token=\(token)").status }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        let elapsed = ContinuousClock.now - started
        print("GraphEmulator latency: 200 concurrent /me calls with 100 ms injected latency took \(elapsed)")
        #expect(statuses.count == 200 && statuses.allSatisfy { $0 == 200 })
        #expect(elapsed < .seconds(10))  // serial answers would take 20 s; the figure is printed
        #expect(harness.emulator.callCount(.me) == 201)
    }

    @Test func latencyAppliesPerEndpointOrToAll() async throws {
        let harness = try Harness()
        let token = try harness.token()
        harness.emulator.setLatency(.milliseconds(300))
        harness.emulator.setLatency(.zero, for: .me)
        // The quickest of three: a loaded machine can stall any single request, but not the delay's floor.
        var fast = Duration.seconds(60)
        for _ in 0..<3 {
            let fastStart = ContinuousClock.now
            _ = try await harness.send("GET", "/me?access_token=\(token)")
            fast = min(fast, ContinuousClock.now - fastStart)
        }
        let slowStart = ContinuousClock.now
        _ = try await harness.send("GET", "/me/permissions?access_token=\(token)")
        let slow = ContinuousClock.now - slowStart
        // Only the delayed endpoint waits the injected 300 ms (absolute bounds on `fast` flake under load).
        #expect(slow >= .milliseconds(300))
        #expect(fast < .milliseconds(300))
    }
}
