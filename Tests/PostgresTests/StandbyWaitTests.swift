import Foundation
import LocalCluster
import Support
import Testing
import TestSupport

@testable import Postgres

/// What the client does when it gives up on a statement whose commit waits for a synchronous standby.
///
/// Each test runs a private cluster whose `synchronous_standby_names` names a standby that never connects, so that
/// every commit waits for it for ever: the state a primary is in while its standby is frozen or cut off.
@Suite("A commit that waits for the standby", .serialized)
struct StandbyWaitTests {
    private static let canRunClusters =
        PostgresBinaries.isAvailable || ProcessInfo.processInfo.environment["CI"] == "true"

    /// A running throwaway cluster with the table `t`, whose commits wait for a standby named `phantom`.
    private func makeCluster() throws -> (Cluster, PostgresConnection) {
        let directory = "/tmp/standby-wait-\(UUID().uuidString.prefix(8).lowercased())"
        let cluster = try Cluster(directory: directory, port: Cluster.freePort(), options: .init(durable: false))
        _ = try cluster.initializeIfNeeded()
        try cluster.start()
        let admin = try PostgresConnection(connectionString: cluster.connectionURL())
        try admin.simpleQuery(unsafeSQL: "CREATE TABLE t (id int)")
        try PhantomStandby.require(on: cluster, admin: admin)
        return (cluster, admin)
    }

    /// A connection as the service makes them, whose statements give up after 1 s plus the margin.
    private func writer(_ cluster: Cluster) throws -> PostgresConnection {
        try PostgresConnection(
            connectionString: cluster.connectionURL(), statementTimeout: .seconds(1),
            applicationName: "standby-wait-writer")
    }

    private func rows(_ admin: PostgresConnection) throws -> Int {
        try admin.query("SELECT count(*)::int AS n FROM t").first?.decode("n", as: Int.self) ?? -1
    }

    /// The pid of the writer's backend while it waits for the standby, once it does.
    private func waitingBackend(_ admin: PostgresConnection) async throws -> Int32? {
        var pid: Int32?
        _ = await TestDatabase.eventually(timeout: .seconds(5)) {
            pid = try? admin.query(
                """
                SELECT pid FROM pg_stat_activity
                WHERE application_name = 'standby-wait-writer' AND wait_event = 'SyncRep'
                """
            ).first?.decode("pid", as: Int32.self)
            return pid != nil
        }
        return pid
    }

    @Test(.enabled(if: canRunClusters)) func aWriteGivenUpOnStaysInvisibleUntilTheStandbyHasIt() async throws {
        let (cluster, admin) = try makeCluster()
        defer { try? cluster.remove() }
        defer { admin.close() }
        let connection = try writer(cluster)
        defer { connection.close() }
        let cancelsBefore = PostgresCanceller.shared.statistics
        let started = ContinuousClock.now
        let error = #expect(throws: PostgresError.self) { try connection.execute("INSERT INTO t VALUES (1)") }
        #expect(error?.code == .timedOut)
        #expect(ContinuousClock.now - started < .seconds(4))
        #expect(!connection.isUsable)
        // The server still waits for the standby, and shows nothing: no cancel request ended the wait.
        let backend = try await waitingBackend(admin)
        #expect(backend != nil)
        try await Task.sleep(for: .seconds(1))
        #expect(try rows(admin) == 0)
        #expect(PostgresCanceller.shared.statistics.sent == cancelsBefore.sent)
        #expect(PostgresCanceller.shared.statistics.pending == 0)
        // The standby's acknowledgement (here: no standby required any more) is what makes it visible.
        try PhantomStandby.release(admin: admin)
        #expect(await TestDatabase.eventually(timeout: .seconds(5)) { (try? rows(admin)) == 1 })
    }

    /// Why the client must not cancel a commit: PostgreSQL's answer to a cancel request during the wait is to
    /// end the wait and show the commit, un-replicated. If this ever changes, the rule above is merely cautious.
    @Test(.enabled(if: canRunClusters)) func aCancelRequestWouldShowTheCommitAtOnce() async throws {
        let (cluster, admin) = try makeCluster()
        defer { try? cluster.remove() }
        defer { admin.close() }
        let connection = try writer(cluster)
        defer { connection.close() }
        #expect(throws: PostgresError.self) { try connection.execute("INSERT INTO t VALUES (1)") }
        let backend = try #require(try await waitingBackend(admin))
        #expect(try rows(admin) == 0)
        _ = try admin.query("SELECT pg_cancel_backend(\(backend))")
        #expect(await TestDatabase.eventually(timeout: .seconds(5)) { (try? rows(admin)) == 1 })
    }

    @Test(.enabled(if: canRunClusters)) func aCommitGivenUpOnIsNotCancelledEither() async throws {
        let (cluster, admin) = try makeCluster()
        defer { try? cluster.remove() }
        defer { admin.close() }
        let connection = try writer(cluster)
        defer { connection.close() }
        let cancelsBefore = PostgresCanceller.shared.statistics
        let error = #expect(throws: PostgresError.self) {
            try connection.transaction { try $0.execute("INSERT INTO t VALUES (1)") }
        }
        #expect(error?.code == .timedOut)
        #expect(try await waitingBackend(admin) != nil)
        try await Task.sleep(for: .seconds(1))
        #expect(try rows(admin) == 0)
        #expect(PostgresCanceller.shared.statistics.sent == cancelsBefore.sent)
    }

    /// A statement inside a transaction block cannot commit, so giving up on it still cancels it: the server
    /// stops working for nobody, and the transaction rolls back.
    @Test(.enabled(if: canRunClusters)) func aStatementInsideATransactionIsCancelledWhenGivenUpOn() async throws {
        let (cluster, admin) = try makeCluster()
        defer { try? cluster.remove() }
        defer { admin.close() }
        // No server-side statement_timeout: only the client's deadline ends the statement.
        let connection = try PostgresConnection(
            connectionString: cluster.connectionURL(), statementTimeout: nil, applicationName: "standby-wait-writer")
        defer { connection.close() }
        connection.callTimeout = .milliseconds(1500)
        let cancelsBefore = PostgresCanceller.shared.statistics
        let error = #expect(throws: PostgresError.self) {
            try connection.transaction { try $0.execute("INSERT INTO t SELECT 1 FROM pg_sleep(30)") }
        }
        #expect(error?.code == .timedOut)
        #expect(
            await TestDatabase.eventually(timeout: .seconds(5)) {
                PostgresCanceller.shared.statistics.sent > cancelsBefore.sent
            })
        let gone = await TestDatabase.eventually(timeout: .seconds(5)) {
            (try? admin.query(
                "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'standby-wait-writer'"
            ).first?.decode("n", as: Int.self)) == 0
        }
        #expect(gone)
        #expect(try rows(admin) == 0)
    }

    /// A read confirming durability returns only once what it saw is on the standby: with the standby away, it
    /// gives up at its deadline instead of answering, and answers once the standby is back.
    @Test(.enabled(if: canRunClusters)) func aReadConfirmingDurabilityWaitsForTheStandby() async throws {
        let (cluster, admin) = try makeCluster()
        defer { try? cluster.remove() }
        defer { admin.close() }
        // Outside a transaction there is no commit to wait for: refused.
        #expect(throws: PostgresError.self) { try admin.confirmDurabilityAtCommit() }
        // A commit that is visible but not on the standby: what a dying primary, or a cancel request, leaves.
        try admin.simpleQuery(unsafeSQL: "SET synchronous_commit TO local")
        try admin.simpleQuery(unsafeSQL: "INSERT INTO t VALUES (1)")
        let connection = try writer(cluster)
        defer { connection.close() }
        #expect(try connection.transaction { try rows($0) } == 1)  // A plain read shows it.
        let error = #expect(throws: PostgresError.self) {
            try connection.transaction { connection in
                let seen = try rows(connection)
                try connection.confirmDurabilityAtCommit()
                return seen
            }
        }
        #expect(error?.code == .timedOut)
        try PhantomStandby.release(admin: admin)
        let reader = try writer(cluster)
        defer { reader.close() }
        let seen = await TestDatabase.eventually(timeout: .seconds(5)) {
            let count = try? reader.transaction { connection in
                let seen = try rows(connection)
                try connection.confirmDurabilityAtCommit()
                return seen
            }
            return count == 1
        }
        #expect(seen)
    }
}
