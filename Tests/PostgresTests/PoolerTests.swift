import Foundation
import LocalCluster
import Support
import Testing
import TestSupport

@testable import Postgres

/// The pool behind a real PgBouncer 1.18 in transaction mode, with fewer server connections than clients, so that
/// a client's statements land on different server sessions all the time.
@Suite("Behind PgBouncer in transaction mode", .serialized, .enabled(if: TestPooler.isEnabled))
struct PoolerTests {
    /// Statements with different parameter counts and results, each checked: a statement run under another's
    /// name would give a wrong answer or a protocol error.
    private static func workload(_ pool: PostgresPool, client: Int, rounds: Int) async throws -> Int {
        var checked = 0
        for round in 0..<rounds {
            let a = client * 1000 + round
            switch round % 4 {
            case 0:
                let rows = try await pool.query("SELECT \(a)::int + 1 AS r")
                #expect(try rows.first?.decode("r", as: Int.self) == a + 1)
            case 1:
                let rows = try await pool.query("SELECT \(a)::int * \(3)::int AS r")
                #expect(try rows.first?.decode("r", as: Int.self) == a * 3)
            case 2:
                let rows = try await pool.query("SELECT \(a)::int - \(1)::int - \(2)::int AS r, now() AS at")
                #expect(try rows.first?.decode("r", as: Int.self) == a - 3)
            default:
                let value = try await pool.transaction { connection in
                    let first = try connection.query("SELECT \(a)::int + 1 AS r").first?.decode("r", as: Int.self)
                    let second = try connection.query("SELECT \(a)::int * \(3)::int AS r").first?.decode(
                        "r", as: Int.self)
                    return (first ?? 0) + (second ?? 0)
                }
                #expect(value == (a + 1) + a * 3)
            }
            checked += 1
        }
        return checked
    }

    private static func run(_ pool: PostgresPool, clients: Int, rounds: Int) async throws -> Int {
        try await withThrowingTaskGroup(of: Int.self) { group in
            for client in 0..<clients {
                group.addTask { try await workload(pool, client: client, rounds: rounds) }
            }
            return try await group.reduce(0, +)
        }
    }

    private func makePool(_ bouncer: PgBouncer, _ mode: PostgresPreparedStatements, size: Int = 8,
                          detected: Locked<[String]>? = nil) throws -> PostgresPool
    {
        var configuration = PostgresPool.Configuration(
            connectionString: TestPooler.url(try TestDatabase.requireURL(), through: bouncer), size: size,
            applicationName: "pooler-tests", preparedStatements: mode)
        configuration.onTransactionPoolerDetected = { evidence in detected?.withLock { $0.append(evidence) } }
        return PostgresPool(configuration: configuration)
    }

    @Test func unnamedStatementsWorkUnderConcurrency() async throws {
        let bouncer = try TestPooler.start(poolSize: 2)
        defer { bouncer.remove() }
        let pool = try makePool(bouncer, .never)
        defer { pool.shutdown() }
        #expect(try await Self.run(pool, clients: 8, rounds: 60) == 480)
        #expect(!pool.preparesStatements)
    }

    @Test func anAutomaticPoolFindsThePoolerAndNoCallFails() async throws {
        let bouncer = try TestPooler.start(poolSize: 2)
        defer { bouncer.remove() }
        let detected = Locked<[String]>([])
        let pool = try makePool(bouncer, .automatic, detected: detected)
        defer { pool.shutdown() }
        var checked = 0
        for _ in 0..<20 where pool.preparesStatements {
            checked += try await Self.run(pool, clients: 8, rounds: 12)
        }
        #expect(checked > 0)
        #expect(!pool.preparesStatements, "found after \(checked) statements")
        let evidence = detected.withLock { $0 }
        #expect(evidence.count == 1)
        #expect(evidence.allSatisfy { $0.contains("26000") || $0.contains("42P05") })
        #expect(try await Self.run(pool, clients: 8, rounds: 20) == 160)
    }

    /// Prepared statements forced on behind a pooler that cannot keep them (the setup that failed before): no
    /// answer is ever another statement's. A single statement refused by a server session runs again unnamed, so
    /// every one succeeds; a transaction whose statement is refused is aborted, run once more, and may then fail,
    /// but only as the database being unavailable (503), never as another error.
    @Test func forcedPreparedStatementsNeverRunTheWrongStatement() async throws {
        let bouncer = try TestPooler.start(poolSize: 2)
        defer { bouncer.remove() }
        let pool = try makePool(bouncer, .always)
        defer { pool.shutdown() }
        let counts = try await withThrowingTaskGroup(of: (ok: Int, unavailable: Int).self) { group in
            for client in 0..<8 {
                group.addTask {
                    var counts = (ok: 0, unavailable: 0)
                    for round in 0..<80 {
                        let a = client * 1000 + round
                        if round % 4 != 3 {
                            let rows = try await pool.query("SELECT \(a)::int - \(1)::int AS r, \(round)::int AS round")
                            #expect(try rows.first?.decode("r", as: Int.self) == a - 1)
                            let other = try await pool.query("SELECT \(a)::int * \(2)::int AS r")
                            #expect(try other.first?.decode("r", as: Int.self) == a * 2)
                            counts.ok += 2
                            continue
                        }
                        do {
                            let value = try await pool.transaction { connection in
                                try connection.query("SELECT \(a)::int * \(2)::int AS r").first?.decode("r", as: Int.self)
                            }
                            #expect(value == a * 2)
                            counts.ok += 1
                        } catch let error as PostgresError where error.isUnavailable {
                            counts.unavailable += 1
                        }
                    }
                    return counts
                }
            }
            return try await group.reduce(into: (ok: 0, unavailable: 0)) {
                $0.ok += $1.ok
                $0.unavailable += $1.unavailable
            }
        }
        #expect(counts.ok + counts.unavailable == 8 * 80 + 8 * 60)
        #expect(counts.ok >= 8 * 60 * 2, "every single statement succeeded")
        #expect(pool.preparesStatements, "an explicit choice is kept")
    }

    /// TimeZone and DateStyle are tracked by PgBouncer per client; bytea_output and statement_timeout are not, and
    /// the service relies on neither behind a transaction pooler.
    @Test func trackedSettingsHoldAndUntrackedOnesAreNotReliedOn() async throws {
        let bouncer = try TestPooler.start(poolSize: 2)
        defer { bouncer.remove() }
        let url = TestPooler.url(try TestDatabase.requireURL(), through: bouncer)
        let pool = try makePool(bouncer, .never, size: 4)
        defer { pool.shutdown() }
        let stop = Locked(false)
        // Two other clients leave other values on the shared server sessions, over and over.
        // On threads of their own: the connection blocks, and the cooperative pool must stay free for the test.
        let polluters = (0..<2).map { _ in
            Task {
                try await onThread {
                    let other = try PostgresConnection(
                        connectionString: url, options: .init(applicationName: "polluter", preparedStatements: .never))
                    defer { other.close() }
                    while !stop.withLock({ $0 }) {
                        try other.simpleQuery(
                            unsafeSQL: "SET TimeZone TO 'America/New_York'; SET DateStyle TO 'German'; "
                                + "SET bytea_output TO 'escape'; SET statement_timeout TO 1234; SELECT pg_sleep(0.005)")
                    }
                }
            }
        }
        defer { stop.withLock { $0 = true } }
        let bytes: [UInt8] = [0, 255, 0x5c, 0x41, 10, 0x7f]
        for _ in 0..<150 {
            let row = try #require(
                try await pool.query(
                    """
                    SELECT current_setting('TimeZone') AS tz, current_setting('DateStyle') AS style, now() AS at,
                        \(bytes)::bytea AS bytes
                    """
                ).first)
            #expect(try row.decode("tz", as: String.self) == "UTC")
            #expect(try row.decode("style", as: String.self) == "ISO, MDY")
            #expect(abs(try row.decode("at", as: Date.self).timeIntervalSinceNow) < 120)
            #expect(try row.decode("bytes", as: [UInt8].self) == bytes)
            let timeout = try await pool.transaction { connection in
                try connection.query("SELECT current_setting('statement_timeout') AS t").first?.decode(
                    "t", as: String.self)
            }
            #expect(timeout == "10s", "SET LOCAL in every transaction")
        }
        stop.withLock { $0 = true }
        for polluter in polluters { try await polluter.value }
    }
}
