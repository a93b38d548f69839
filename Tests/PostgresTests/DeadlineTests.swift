import Foundation
import Glibc
import LocalCluster
import Support
import Testing
import TestSupport

@testable import Postgres

/// Client-side deadlines against a private cluster that the tests freeze (SIGSTOP, as a hung host) and thaw, and
/// the connection settings that reach libpq.
@Suite("Deadlines, keepalives and a frozen server", .serialized)
struct DeadlineTests {
    private static let canRunClusters =
        PostgresBinaries.isAvailable || ProcessInfo.processInfo.environment["CI"] == "true"

    /// A running throwaway cluster; the caller removes it.
    private func makeCluster() throws -> Cluster {
        let directory = "/tmp/deadline-test-\(UUID().uuidString.prefix(8).lowercased())"
        let cluster = try Cluster(directory: directory, port: Cluster.freePort(), options: .init(durable: false))
        _ = try cluster.initializeIfNeeded()
        try cluster.start()
        return cluster
    }

    private func makePool(_ cluster: Cluster, size: Int = 2) -> PostgresPool {
        var configuration = PostgresPool.Configuration(
            connectionString: cluster.connectionURL(), size: size, acquireTimeout: .seconds(10),
            statementTimeout: .seconds(1), connectTimeout: .seconds(2), applicationName: "deadline-tests")
        configuration.deadlineMargin = .milliseconds(500)
        return PostgresPool(configuration: configuration)
    }

    /// Runs `body` and returns its outcome and how long it took.
    private func timed<T>(_ body: () async throws -> T) async -> (Result<T, any Error>, Duration) {
        let start = ContinuousClock.now
        do {
            let value = try await body()
            return (.success(value), ContinuousClock.now - start)
        } catch {
            return (.failure(error), ContinuousClock.now - start)
        }
    }

    @Test(.enabled(if: canRunClusters)) func aFrozenServerAnswersWithinTheDeadlineAndTheServiceRecovers() async throws {
        let cluster = try makeCluster()
        defer { try? cluster.remove() }
        let pool = makePool(cluster)
        defer { pool.shutdown() }
        // Both connections open and idle.
        async let warmA = pool.query("SELECT pg_sleep(0.2)")
        async let warmB = pool.query("SELECT pg_sleep(0.2)")
        _ = try await (warmA, warmB)
        #expect(cluster.freeze().count > 1)
        defer { cluster.thaw() }
        // Two callers at once, one per connection: each gives up at 1 s + 500 ms, neither waits for the other.
        async let first = timed { try await pool.query("SELECT 1 AS one") }
        async let second = timed { try await pool.query("SELECT 2 AS two") }
        for (outcome, elapsed) in await [first, second] {
            guard case .failure(let error as PostgresError) = outcome else {
                Issue.record("expected a PostgresError, got \(outcome)")
                continue
            }
            #expect(error.code == .timedOut && error.isUnavailable)
            #expect(elapsed >= .milliseconds(1400) && elapsed < .milliseconds(3500), "\(elapsed)")
        }
        // The workers are free at once; a new connection to the frozen server gives up at connect_timeout (2 s).
        let (third, thirdTook) = await timed { try await pool.query("SELECT 3 AS three") }
        #expect((try? third.get()) == nil)
        #expect(thirdTook < .seconds(5), "\(thirdTook)")
        cluster.thaw()
        // Back without a restart of anything.
        let recovered = await TestDatabase.eventually(timeout: .seconds(15)) {
            (try? await pool.query("SELECT 4 AS four").first?.decode("four", as: Int.self)) == 4
        }
        #expect(recovered)
    }

    /// A statement inside a transaction gives up the same way, and its cancel request, queued while the server
    /// is frozen, reaches it once it runs again. (Statements that may commit are never cancelled:
    /// `StandbyWaitTests`.)
    @Test(.enabled(if: canRunClusters)) func aCancelQueuedAgainstAFrozenServerIsSentOnceItRuns() async throws {
        let cluster = try makeCluster()
        defer { try? cluster.remove() }
        let connection = try PostgresConnection(
            connectionString: cluster.connectionURL(), statementTimeout: .seconds(1))
        defer { connection.close() }
        let cancelsBefore = PostgresCanceller.shared.statistics.sent
        let (outcome, elapsed) = await timed {
            try connection.transaction { connection in
                #expect(cluster.freeze().count > 1)
                return try connection.query("SELECT 1 AS one")
            }
        }
        defer { cluster.thaw() }
        guard case .failure(let error as PostgresError) = outcome else {
            Issue.record("expected a PostgresError, got \(outcome)")
            return
        }
        #expect(error.code == .timedOut)
        #expect(elapsed >= .milliseconds(1400) && elapsed < .milliseconds(3500), "\(elapsed)")
        cluster.thaw()
        let sent = await TestDatabase.eventually(timeout: .seconds(10)) {
            PostgresCanceller.shared.statistics.sent > cancelsBefore
        }
        #expect(sent)
    }

    /// The exact cache's fence (a bare Sync) is bounded like a statement: against a frozen server it gives up at
    /// the connection's deadline, and the connection is closed, so the listener reconnects instead of hanging.
    @Test(.enabled(if: canRunClusters)) func aSyncAgainstAFrozenServerGivesUpAtItsDeadline() async throws {
        let cluster = try makeCluster()
        defer { try? cluster.remove() }
        let connection = try PostgresConnection(
            connectionString: cluster.connectionURL(), statementTimeout: .seconds(1))
        defer { connection.close() }
        try connection.synchronize()
        #expect(cluster.freeze().count > 1)
        defer { cluster.thaw() }
        let (outcome, elapsed) = await timed { try connection.synchronize() }
        guard case .failure(let error as PostgresError) = outcome else {
            Issue.record("expected a PostgresError, got \(outcome)")
            return
        }
        #expect(error.code == .timedOut)
        #expect(elapsed >= .milliseconds(1400) && elapsed < .milliseconds(3500), "\(elapsed)")
        #expect(!connection.isUsable)
    }

    @Test(.enabled(if: canRunClusters)) func aStuckBackendHoldsOnlyItsOwnCaller() async throws {
        let cluster = try makeCluster()
        defer { try? cluster.remove() }
        let pool = makePool(cluster)
        defer { pool.shutdown() }
        async let warmA = pool.query("SELECT pg_sleep(0.2)")
        async let warmB = pool.query("SELECT pg_sleep(0.2)")
        _ = try await (warmA, warmB)
        let admin = try PostgresConnection(connectionString: cluster.connectionURL())
        defer { admin.close() }
        let pids = try admin.query(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'deadline-tests' ORDER BY pid"
        ).map { try $0.decode("pid", as: Int32.self) }
        try #require(pids.count == 2)
        kill(pids[0], SIGSTOP)
        defer { kill(pids[0], SIGCONT) }
        async let first = timed { try await pool.query("SELECT 1 AS one") }
        async let second = timed { try await pool.query("SELECT 2 AS two") }
        let outcomes = await [first, second]
        let failed = outcomes.filter { (try? $0.0.get()) == nil }
        #expect(failed.count == 1, "only the caller on the stopped backend fails")
        #expect(failed.allSatisfy { $0.1 < .milliseconds(3500) })
        #expect(outcomes.contains { (try? $0.0.get()) != nil && $0.1 < .seconds(1) })
        // Later callers never wait on the stuck connection: it was closed at the deadline.
        for round in 0..<5 {
            let (outcome, took) = await timed { try await pool.query("SELECT \(round)::int AS n") }
            #expect((try? outcome.get()) != nil && took < .seconds(1), "\(took)")
        }
    }

    @Test(.enabled(if: TestDatabase.isEnabled)) func keepalivesAndTimeoutsReachLibpqAndTheURLWins() throws {
        let url = try TestDatabase.requireURL()
        let plain = try PostgresConnection(connectionString: url, options: .init(applicationName: "fbsessiond-test"))
        defer { plain.close() }
        let defaults = plain.settingsInEffect()
        #expect(defaults["connect_timeout"] == "5")
        #expect(defaults["keepalives"] == "1" && defaults["keepalives_idle"] == "5")
        #expect(defaults["keepalives_interval"] == "2" && defaults["keepalives_count"] == "3")
        #expect(defaults["tcp_user_timeout"] == "10000")
        #expect(defaults["password"] == nil)
        let separator = url.contains("?") ? "&" : "?"
        let tuned = try PostgresConnection(
            connectionString: url + separator
                + "connect_timeout=3&keepalives_idle=30&tcp_user_timeout=2500&application_name=ops",
            options: .init(connectTimeout: .seconds(9), applicationName: "fbsessiond-test"))
        defer { tuned.close() }
        let chosen = tuned.settingsInEffect()
        #expect(chosen["connect_timeout"] == "3" && chosen["keepalives_idle"] == "30")
        #expect(chosen["tcp_user_timeout"] == "2500" && chosen["keepalives_interval"] == "2")
        // The service's own name wins, so operators can always tell its connections apart.
        let name = try tuned.query("SELECT application_name FROM pg_stat_activity WHERE pid = pg_backend_pid()")
        #expect(try name.first?.decode("application_name", as: String.self) == "fbsessiond-test")
    }

    @Test(.enabled(if: canRunClusters)) func theURLsConnectTimeoutIsHonouredAgainstAFrozenServer() async throws {
        let cluster = try makeCluster()
        defer { try? cluster.remove() }
        cluster.freeze()
        defer { cluster.thaw() }
        let url = cluster.connectionURL() + "?connect_timeout=2"
        let (outcome, took) = await timed {
            try await onThread {
                try PostgresConnection(connectionString: url, options: .init(connectTimeout: .seconds(20))).close()
            }
        }
        #expect((try? outcome.get()) == nil)
        #expect(took >= .milliseconds(1500) && took < .seconds(5), "\(took)")
    }

    /// Signals a listener got, in order.
    final class Signals: Sendable {
        private let seen = Locked<[PostgresListener.Signal]>([])
        func append(_ signal: PostgresListener.Signal) { seen.withLock { $0.append(signal) } }
        var all: [PostgresListener.Signal] { seen.withLock { $0 } }
        func count(of signal: PostgresListener.Signal) -> Int { all.filter { $0 == signal }.count }
    }

    @Test(.enabled(if: canRunClusters)) func theListenerFindsAFrozenOrKilledServerAndListensAgain() async throws {
        let cluster = try makeCluster()
        defer { try? cluster.remove() }
        let signals = Signals()
        let listener = PostgresListener(
            configuration: .init(
                connectionString: cluster.connectionURL(), channels: ["deadline_events"], connectTimeout: .seconds(2),
                keepaliveInterval: .milliseconds(300), pingTimeout: .milliseconds(500),
                initialReconnectDelay: .milliseconds(50), maxReconnectDelay: .milliseconds(300))
        ) { signals.append($0) }
        listener.start()
        defer { listener.stop() }
        #expect(await TestDatabase.eventually { listener.isListening })
        let admin = try PostgresConnection(connectionString: cluster.connectionURL())
        defer { admin.close() }

        cluster.freeze()
        let start = ContinuousClock.now
        let noticed = await TestDatabase.eventually(timeout: .seconds(5)) { signals.count(of: .disconnected) == 1 }
        #expect(noticed, "a frozen server is noticed by the pings")
        #expect(ContinuousClock.now - start < .seconds(3))
        cluster.thaw()
        #expect(await TestDatabase.eventually(timeout: .seconds(10)) { signals.count(of: .reconnected) == 1 })
        try await notifyAndExpect("after-freeze", admin: admin, signals: signals)

        try cluster.stop(mode: .immediate)
        #expect(await TestDatabase.eventually(timeout: .seconds(5)) { signals.count(of: .disconnected) == 2 })
        try cluster.start()
        #expect(await TestDatabase.eventually(timeout: .seconds(10)) { signals.count(of: .reconnected) == 2 })
        let again = try PostgresConnection(connectionString: cluster.connectionURL())
        defer { again.close() }
        try await notifyAndExpect("after-kill", admin: again, signals: signals)
    }

    /// Sends a notification and expects the listener to hand it over within a second.
    private func notifyAndExpect(_ payload: String, admin: PostgresConnection, signals: Signals) async throws {
        _ = try admin.query("SELECT pg_notify('deadline_events', \(payload))")
        let expected = PostgresListener.Signal.notification(channel: "deadline_events", payload: payload)
        #expect(await TestDatabase.eventually(timeout: .seconds(1)) { signals.all.contains(expected) })
    }
}
