import Foundation
import Postgres
import Testing

/// ``PostgresListener/sendFence(_:)`` against a real server: the fence comes back through the callback, after every
/// notification of a transaction that committed before it was sent (PostgreSQL's commit-order delivery, which the
/// exact cache rests on: docs/caching.md, "The fence, and why it proves enough").
@Suite("Listener fences against a real database", .enabled(if: TestDatabase.isEnabled))
struct ListenerFenceTests {
    final class Seen: @unchecked Sendable {
        private let lock = NSLock()
        private var signals: [PostgresListener.Signal] = []
        func append(_ signal: PostgresListener.Signal) { lock.withLock { signals.append(signal) } }
        var all: [PostgresListener.Signal] { lock.withLock { signals } }
    }

    @Test func everyEarlierCommitIsHandedOutBeforeTheFence() async throws {
        let url = try TestDatabase.requireURL()
        let fenceChannel = "fence_test_\(UInt32.random(in: 0...UInt32.max))"
        var configuration = PostgresListener.Configuration(connectionString: url, channels: ["fence_changes"])
        configuration.fenceChannel = fenceChannel
        let seen = Seen()
        let listener = PostgresListener(configuration: configuration) { seen.append($0) }
        listener.start()
        defer { listener.stop() }
        #expect(await TestDatabase.eventually { listener.isListening })
        let writer = try PostgresConnection(connectionString: url)
        defer { writer.close() }

        for round in 1...50 {
            // Committed (and acknowledged) before the fence is asked for.
            for part in 0..<3 {
                _ = try writer.query("SELECT pg_notify('fence_changes', \("\(round).\(part)"))")
            }
            listener.sendFence(String(round))
            let fence = PostgresListener.Signal.notification(channel: fenceChannel, payload: String(round))
            #expect(await TestDatabase.eventually(timeout: .seconds(5)) { seen.all.contains(fence) })
            let all = seen.all
            guard let fenceAt = all.firstIndex(of: fence) else { return }
            for part in 0..<3 {
                let change = PostgresListener.Signal.notification(channel: "fence_changes", payload: "\(round).\(part)")
                let changeAt = all.firstIndex(of: change)
                #expect(changeAt != nil && changeAt! < fenceAt, "round \(round): change \(part) after its fence")
            }
        }
    }
}
