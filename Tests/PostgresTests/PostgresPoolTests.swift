import Foundation
import Testing
import TestSupport

@testable import Postgres

@Suite("PostgresPool against a real database", .enabled(if: TestDatabase.isEnabled), .serialized)
struct PostgresPoolTests {
    private func makePool(
        size: Int = 2,
        maxWaiters: Int = 1000,
        acquireTimeout: Duration = .seconds(5),
        statementTimeout: Duration? = .seconds(10),
        checksIdleConnections: Bool = true
    ) throws -> PostgresPool {
        var configuration = PostgresPool.Configuration(
            connectionString: try TestDatabase.requireURL(),
            size: size,
            maxWaiters: maxWaiters,
            acquireTimeout: acquireTimeout,
            statementTimeout: statementTimeout,
            applicationName: "postgres-pool-tests"
        )
        configuration.checksIdleConnections = checksIdleConnections
        return PostgresPool(configuration: configuration)
    }

    private func backendPID(_ pool: PostgresPool) async throws -> Int {
        let rows = try await pool.query("SELECT pg_backend_pid() AS pid")
        return try #require(try rows.first?.decode("pid", as: Int.self))
    }

    /// Terminates `pid` from a separate connection and waits until the backend is gone.
    private func terminate(_ pid: Int) async throws {
        let admin = try PostgresConnection(connectionString: try TestDatabase.requireURL())
        defer { admin.close() }
        let rows = try admin.query("SELECT pg_terminate_backend(\(pid)::int) AS done")
        #expect(try rows.first?.decode("done", as: Bool.self) == true)
        let gone = try await TestDatabase.eventually {
            try admin.query("SELECT count(*) AS n FROM pg_stat_activity WHERE pid = \(pid)::int")
                .first?.decode("n", as: Int.self) == 0
        }
        #expect(gone)
    }

    @Test func bodiesRunOnPoolThreadsAndTransactionsWork() async throws {
        let pool = try makePool()
        defer { pool.shutdown() }
        let threadName = try await pool.withConnection { _ in Thread.current.name ?? "" }
        #expect(threadName.hasPrefix("pg-pool-"))
        let table = "pool_tx_\(UInt32.random(in: 0...UInt32.max))"
        try await pool.execute(PostgresQuery(unsafeSQL: "CREATE TABLE \(table) (v int)"))
        let insert = PostgresQuery(unsafeSQL: "INSERT INTO \(table) VALUES (1)")
        try await pool.transaction { connection in try connection.execute(insert) }
        struct Boom: Error {}
        await #expect(throws: Boom.self) {
            try await pool.transaction { connection in
                try connection.execute(insert)
                throw Boom()
            }
        }
        // A body that leaves a transaction open gets it rolled back before the connection is reused.
        try await pool.withConnection { connection in
            try connection.simpleQuery(unsafeSQL: "BEGIN")
            try connection.execute(insert)
        }
        let count = try await pool.query(PostgresQuery(unsafeSQL: "SELECT count(*) AS n FROM \(table)"))
        #expect(try count.first?.decode("n", as: Int.self) == 1)
        try await pool.execute(PostgresQuery(unsafeSQL: "DROP TABLE \(table)"))
    }

    /// A handler's task (one that prefers the inline executor) goes on on the worker that ran its statement,
    /// without a hop to another thread (docs/performance.md, round 3).
    @Test func anInlineCallerGoesOnOnTheWorker() async throws {
        let pool = try makePool()
        defer { pool.shutdown() }
        let (rows, resumedOn) = try await threadAfterInlineAwait { try await pool.query("SELECT 1 AS one") }
        #expect(try rows.first?.decode("one", as: Int.self) == 1)
        #expect(resumedOn.hasPrefix("pg-pool-"), "\(resumedOn)")
    }

    @Test func callersQueueWhenAllConnectionsAreBusy() async throws {
        let pool = try makePool(size: 2)
        defer { pool.shutdown() }
        let clock = ContinuousClock()
        let start = clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<10 {
                group.addTask { try await pool.execute("SELECT pg_sleep(\(0.2))") }
            }
            try await group.waitForAll()
        }
        let elapsed = clock.now - start
        // 10 sleeps of 0.2 s over 2 connections take at least 1 s; a generous upper bound for a busy machine.
        #expect(elapsed >= .milliseconds(950))
        #expect(elapsed < .seconds(6))
        // A worker resumes its caller before it returns to the pool, so the count settles a moment later.
        let settled = PostgresPool.Statistics(size: 2, open: 2, inUse: 0, waiting: 0)
        #expect(await TestDatabase.eventually { pool.statistics == settled })
    }

    @Test func fullWaitQueueRefusesAtOnce() async throws {
        let pool = try makePool(size: 1, maxWaiters: 1)
        defer { pool.shutdown() }
        let busy = Task { try await pool.execute("SELECT pg_sleep(\(1.0))") }
        #expect(await TestDatabase.eventually { pool.statistics.inUse == 1 })
        let waiter = Task { try await pool.query("SELECT 1 AS one") }
        #expect(await TestDatabase.eventually { pool.statistics.waiting == 1 })
        let clock = ContinuousClock()
        let start = clock.now
        let error = await #expect(throws: PostgresError.self) { try await pool.query("SELECT 1") }
        #expect(clock.now - start < .seconds(6))
        #expect(error?.code == .poolExhausted)
        #expect(error?.isUnavailable == true)
        _ = try await busy.value
        #expect(try await waiter.value.first?.decode("one", as: Int.self) == 1)
    }

    @Test func waitersTimeOut() async throws {
        let pool = try makePool(size: 1, acquireTimeout: .milliseconds(300))
        defer { pool.shutdown() }
        let busy = Task { try await pool.execute("SELECT pg_sleep(\(1.5))") }
        #expect(await TestDatabase.eventually { pool.statistics.inUse == 1 })
        let clock = ContinuousClock()
        let start = clock.now
        let error = await #expect(throws: PostgresError.self) { try await pool.query("SELECT 1") }
        let elapsed = clock.now - start
        #expect(error?.code == .poolTimeout)
        #expect(error?.isUnavailable == true)
        #expect(elapsed >= .milliseconds(250) && elapsed < .seconds(4))
        #expect(pool.statistics.waiting == 0)
        _ = try await busy.value
    }

    @Test func cancelledWaitersLeaveTheQueue() async throws {
        let pool = try makePool(size: 1)
        defer { pool.shutdown() }
        let busy = Task { try await pool.execute("SELECT pg_sleep(\(0.8))") }
        #expect(await TestDatabase.eventually { pool.statistics.inUse == 1 })
        let waiter = Task { try await pool.query("SELECT 1") }
        #expect(await TestDatabase.eventually { pool.statistics.waiting == 1 })
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(pool.statistics.waiting == 0)
        _ = try await busy.value
        #expect(try await pool.query("SELECT 1 AS one").count == 1)
    }

    @Test func statementTimeoutApplies() async throws {
        let pool = try makePool(size: 1, statementTimeout: .milliseconds(300))
        defer { pool.shutdown() }
        let error = await #expect(throws: PostgresError.self) { try await pool.query("SELECT pg_sleep(\(5.0))") }
        #expect(error?.sqlState == "57014")
        #expect(try await pool.query("SELECT 1").count == 1)
    }

    @Test func reconnectsAfterTheBackendIsTerminated() async throws {
        let pool = try makePool(size: 1)
        defer { pool.shutdown() }
        let first = try await backendPID(pool)
        try await terminate(first)
        // The idle check finds the ended session before the body starts, so even a body that the pool
        // never reruns gets a fresh connection.
        let second = try await pool.withConnection { connection in
            try connection.query("SELECT pg_backend_pid() AS pid").first?.decode("pid", as: Int.self)
        }
        #expect(second != nil && second != first)
        #expect(try await backendPID(pool) == second)
        #expect(pool.statistics.open == 1)
    }

    @Test func retriesTheFirstStatementOnceWhenTheIdleCheckMissesAStaleConnection() async throws {
        let pool = try makePool(size: 1, checksIdleConnections: false)
        defer { pool.shutdown() }
        let first = try await backendPID(pool)
        try await terminate(first)
        #expect(try await backendPID(pool) != first)  // query(_:) retried on a fresh connection.

        let second = try await backendPID(pool)
        try await terminate(second)
        let error = await #expect(throws: PostgresError.self) {
            try await pool.withConnection { connection in try connection.query("SELECT 1") }
        }
        #expect(error?.code == .connectionLost)  // A caller's body is never rerun...
        #expect(error?.isUnavailable == true)
        #expect(try await backendPID(pool) != second)  // ...but the next use reconnects.
    }

    @Test func unreachableDatabaseFailsFastAsUnavailable() async throws {
        let pool = PostgresPool(
            configuration: .init(connectionString: "postgresql://app:Sup3rS3cretPw@127.0.0.1:1/db", size: 1)
        )
        defer { pool.shutdown() }
        let clock = ContinuousClock()
        let start = clock.now
        let error = await #expect(throws: PostgresError.self) { try await pool.query("SELECT 1") }
        #expect(clock.now - start < .seconds(6))
        #expect(error?.code == .connectionFailed)
        #expect(error?.isUnavailable == true)
        #expect(error.map { "\($0)".contains("Sup3rS3cretPw") } == false)
        #expect(error?.debugDescription.contains("Sup3rS3cretPw") == false)
        #expect(!"\(pool.configuration)".contains("Sup3rS3cretPw"))
        let settled = PostgresPool.Statistics(size: 1, open: 0, inUse: 0, waiting: 0)
        #expect(await TestDatabase.eventually { pool.statistics == settled })
    }

    @Test func shutdownFailsWaitersAndLaterCalls() async throws {
        let pool = try makePool(size: 1)
        let busy = Task { try await pool.execute("SELECT pg_sleep(\(0.5))") }
        #expect(await TestDatabase.eventually { pool.statistics.inUse == 1 })
        let waiter = Task { try await pool.query("SELECT 1") }
        #expect(await TestDatabase.eventually { pool.statistics.waiting == 1 })
        pool.shutdown()
        pool.shutdown()
        let waiterError = await #expect(throws: PostgresError.self) { try await waiter.value }
        #expect(waiterError?.code == .poolClosed)
        _ = try await busy.value  // The running body finishes normally.
        let later = await #expect(throws: PostgresError.self) { try await pool.query("SELECT 1") }
        #expect(later?.code == .poolClosed)
        #expect(await TestDatabase.eventually { pool.statistics.open == 0 })
    }
}
