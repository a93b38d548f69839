import Foundation
@testable import Postgres
import Testing

/// ``PostgresFenceConnection`` against a real server, driven as an event loop drives it (poll, read, send): a Sync
/// comes back after every notification of a transaction that committed before it was sent, and a connection the
/// server ends reads as lost.
@Suite("Fence connections against a real database", .enabled(if: TestDatabase.isEnabled))
struct FenceConnectionTests {
    private static func connect(_ url: String, name: String = "fence-connection-tests") throws -> PostgresFenceConnection {
        try PostgresFenceConnection(
            connectionString: url, channels: ["fence_loop_changes"],
            options: PostgresConnection.Options(
                statementTimeout: .seconds(3), deadlineMargin: .zero, applicationName: name,
                preparedStatements: .never))
    }

    /// Polls and reads until `done` holds of everything read so far, or 5 seconds pass.
    private static func read(
        _ connection: PostgresFenceConnection, into all: inout PostgresFenceConnection.Input,
        until done: (PostgresFenceConnection.Input) -> Bool
    ) {
        let deadline = Date().addingTimeInterval(5)
        while !done(all), !all.lost, Date() < deadline {
            var descriptor = pollfd(fd: connection.descriptor, events: Int16(POLLIN), revents: 0)
            _ = poll(&descriptor, 1, 100)
            let input = connection.read()
            all.syncs += input.syncs
            all.notifications += input.notifications
            all.lost = all.lost || input.lost
        }
    }

    /// Rounds of three notifications committed (and acknowledged) by another connection, then a Sync at once, while
    /// a third connection keeps committing notifications nobody listens to. A change read after its round's Sync
    /// came back fails the round.
    @Test func everyEarlierCommitIsReadBeforeTheSyncComesBack() throws {
        let url = try TestDatabase.requireURL()
        let fence = try Self.connect(url)
        defer { fence.close() }
        let writer = try PostgresConnection(connectionString: url)
        defer { writer.close() }
        let noise = Thread {
            guard let connection = try? PostgresConnection(connectionString: url) else { return }
            defer { connection.close() }
            while !Thread.current.isCancelled {
                _ = try? connection.query("SELECT pg_notify('fence_loop_noise', 'x')")
            }
        }
        noise.start()
        defer { noise.cancel() }

        var late: [String] = []
        let rounds = 400
        for round in 1...rounds {
            for part in 0..<3 {
                _ = try writer.query("SELECT pg_notify('fence_loop_changes', \("\(round).\(part)"))")
            }
            #expect(fence.sendSync())
            var all = PostgresFenceConnection.Input()
            var seenBeforeSync: Set<String> = []
            let deadline = Date().addingTimeInterval(5)
            // Read in small steps, noting what had arrived by the time the Sync's answer was read.
            while all.syncs == 0, !all.lost, Date() < deadline {
                var descriptor = pollfd(fd: fence.descriptor, events: Int16(POLLIN), revents: 0)
                _ = poll(&descriptor, 1, 100)
                let input = fence.read()
                for notification in input.notifications { seenBeforeSync.insert(notification.payload) }
                all.syncs += input.syncs
                all.lost = all.lost || input.lost
            }
            #expect(all.syncs == 1 && !all.lost, "round \(round): the Sync did not come back")
            for part in 0..<3 where !seenBeforeSync.contains("\(round).\(part)") {
                late.append("\(round).\(part)")
            }
        }
        #expect(late.isEmpty, "\(late.count) of \(rounds * 3) changes came after their round's Sync: \(late.prefix(10))")
        #expect(fence.syncsInFlight == 0)
    }

    /// Several Syncs out at once come back one by one, in order, and nothing else arrives.
    @Test func syncsSentTogetherAllComeBack() throws {
        let url = try TestDatabase.requireURL()
        let fence = try Self.connect(url)
        defer { fence.close() }
        for _ in 0..<5 { #expect(fence.sendSync()) }
        #expect(fence.syncsInFlight == 5)
        var all = PostgresFenceConnection.Input()
        Self.read(fence, into: &all) { $0.syncs == 5 }
        #expect(all.syncs == 5 && !all.lost && all.notifications.isEmpty)
        #expect(fence.syncsInFlight == 0)
    }

    /// `pg_terminate_backend` on the connection: the next read says it is lost.
    @Test func aTerminatedBackendReadsAsLost() throws {
        let url = try TestDatabase.requireURL()
        let name = "fence-connection-ended-\(UInt32.random(in: 0...UInt32.max))"
        let fence = try Self.connect(url, name: name)
        defer { fence.close() }
        let admin = try PostgresConnection(connectionString: url)
        defer { admin.close() }
        _ = try admin.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = \(name)")
        var all = PostgresFenceConnection.Input()
        Self.read(fence, into: &all) { _ in false }
        #expect(all.lost)
    }

    @Test func aChannelThatIsNoNameIsRefused() throws {
        let url = try TestDatabase.requireURL()
        #expect(throws: PostgresError.self) {
            _ = try PostgresFenceConnection(
                connectionString: url, channels: ["x\"; DROP TABLE t; --"], options: PostgresConnection.Options())
        }
    }
}
