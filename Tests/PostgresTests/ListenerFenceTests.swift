import Foundation
@testable import Postgres
import Support
import Testing

/// ``PostgresListener/sendFence(_:)`` against a real server, by each ``PostgresListener/FenceMethod``: the fence
/// comes back through the callback after every notification of a transaction that committed before it was sent,
/// which the exact cache rests on (docs/caching.md, "The fence, and why it proves enough").
@Suite("Listener fences against a real database", .enabled(if: TestDatabase.isEnabled))
struct ListenerFenceTests {
    final class Seen: Sendable {
        private let signals = Locked<[PostgresListener.Signal]>([])
        func append(_ signal: PostgresListener.Signal) { signals.withLock { $0.append(signal) } }
        var all: [PostgresListener.Signal] { signals.withLock { $0 } }
    }

    private static func listener(
        _ url: String, method: PostgresListener.FenceMethod?, seen: Seen, applicationName: String = "fence-tests"
    ) -> PostgresListener {
        var configuration = PostgresListener.Configuration(
            connectionString: url, channels: ["fence_changes"], applicationName: applicationName)
        configuration.fenceChannel = "fence_test_\(UInt32.random(in: 0...UInt32.max))"
        configuration.fenceMethod = method
        return PostgresListener(configuration: configuration) { seen.append($0) }
    }

    /// Rounds of three notifications committed (and acknowledged) by another connection, then a fence at once;
    /// another connection keeps committing notifications on a channel nobody listens to meanwhile, so that the
    /// listener's backend is often signalled and the queue busy. A change handed out after its round's fence
    /// fails the round.
    @Test(arguments: [PostgresListener.FenceMethod.sync, .notify])
    func everyEarlierCommitIsHandedOutBeforeTheFence(method: PostgresListener.FenceMethod) async throws {
        let url = try TestDatabase.requireURL()
        let seen = Seen()
        let listener = Self.listener(url, method: method, seen: seen)
        listener.start()
        defer { listener.stop() }
        #expect(await TestDatabase.eventually { listener.isListening })
        #expect(listener.fenceMethod == method)
        let writer = try PostgresConnection(connectionString: url)
        defer { writer.close() }
        let noise = Task.detached {
            guard let connection = try? PostgresConnection(connectionString: url) else { return }
            defer { connection.close() }
            while !Task.isCancelled {
                _ = try? connection.query("SELECT pg_notify('fence_noise', 'x')")
            }
        }
        defer { noise.cancel() }

        var late: [String] = []
        let rounds = 400
        for round in 1...rounds {
            for part in 0..<3 {
                _ = try writer.query("SELECT pg_notify('fence_changes', \("\(round).\(part)"))")
            }
            listener.sendFence(String(round))
            let fence = PostgresListener.Signal.fence(token: String(round))
            #expect(await TestDatabase.eventually(timeout: .seconds(5)) { seen.all.contains(fence) })
            let all = seen.all
            guard let fenceAt = all.firstIndex(of: fence) else { return }
            for part in 0..<3 {
                let change = PostgresListener.Signal.notification(channel: "fence_changes", payload: "\(round).\(part)")
                if let changeAt = all.firstIndex(of: change), changeAt < fenceAt { continue }
                late.append("\(round).\(part)")
            }
        }
        #expect(late.isEmpty, "\(late.count) of \(rounds * 3) changes came after their round's fence: \(late.prefix(10))")
    }

    @Test func theServerVersionChoosesTheMethod() {
        #expect(PostgresListenerLoop.fenceMethod(serverVersion: 150_000) == .sync)
        #expect(PostgresListenerLoop.fenceMethod(serverVersion: 170_002) == .sync)
        #expect(PostgresListenerLoop.fenceMethod(serverVersion: 140_011) == .notify)
    }

    /// By default the method follows the server: this suite's server is PostgreSQL 15 or later, so a fence is a
    /// bare Sync, which runs no statement: the listener's session still shows its last `LISTEN` as its last query,
    /// started when it was, after five fences; and it is not listening on its fence channel.
    @Test func byDefaultAFenceOnPostgreSQL15IsABareSync() async throws {
        let url = try TestDatabase.requireURL()
        let probe = try PostgresConnection(connectionString: url)
        defer { probe.close() }
        try #require(probe.serverVersion >= 150_000, "this suite expects PostgreSQL 15 or later")
        let seen = Seen()
        let name = "fence-default-\(UInt32.random(in: 0...UInt32.max))"
        let listener = Self.listener(url, method: nil, seen: seen, applicationName: name)
        listener.start()
        defer { listener.stop() }
        #expect(await TestDatabase.eventually { listener.isListening })
        func lastStatement() throws -> [String] {
            try probe.query(
                "SELECT query, query_start::text AS started FROM pg_stat_activity WHERE application_name = \(name)"
            ).map { "\(try $0.decode("query", as: String.self)) at \(try $0.decode("started", as: String.self))" }
        }
        let before = try lastStatement()
        for round in 1...5 {
            listener.sendFence(String(round))
            #expect(await TestDatabase.eventually(timeout: .seconds(5)) { seen.all.contains(.fence(token: String(round))) })
        }
        #expect(listener.fenceMethod == .sync)
        #expect(before.count == 1 && before.first?.hasPrefix("LISTEN \"fence_changes\"") == true, "\(before)")
        #expect(try lastStatement() == before)
    }
}
