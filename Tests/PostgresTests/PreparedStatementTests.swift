import Foundation
import LocalCluster
import Testing

@testable import Postgres

/// Parameterized statements are prepared once per connection and survive what ends a connection: the pool's
/// next connection prepares them again.
@Suite("Prepared statements", .serialized)
struct PreparedStatementTests {
    private static let canRunClusters =
        PostgresBinaries.isAvailable || ProcessInfo.processInfo.environment["CI"] == "true"

    private func lookup(_ pool: PostgresPool, _ value: Int) async throws -> (value: Int, prepared: Int, pid: Int) {
        try await pool.withConnection { connection in
            let row = try #require(
                try connection.query("SELECT \(value)::int + 1 AS next, pg_backend_pid() AS pid").first)
            return (
                try row.decode("next", as: Int.self), connection.preparedStatementCount, try row.decode("pid", as: Int.self)
            )
        }
    }

    @Test(.enabled(if: TestDatabase.isEnabled)) func aStatementIsPreparedOnceAndItsRowsDecodeByName() async throws {
        let pool = PostgresPool(configuration: .init(connectionString: try TestDatabase.requireURL(), size: 1))
        defer { pool.shutdown() }
        for value in 0..<20 {
            let result = try await lookup(pool, value)
            #expect(result.value == value + 1)
            #expect(result.prepared == 1)
        }
        let names = try await pool.query("SELECT count(*) AS n FROM pg_prepared_statements WHERE name LIKE 'fbs_%'")
        // This query is the pool connection's second statement; both are prepared on the one connection.
        #expect(try names.first?.decode("n", as: Int.self) == 2)
    }

    @Test(.enabled(if: TestDatabase.isEnabled)) func aTerminatedSessionPreparesAgainOnTheNextConnection() async throws {
        let url = try TestDatabase.requireURL()
        let pool = PostgresPool(configuration: .init(connectionString: url, size: 1))
        defer { pool.shutdown() }
        let first = try await lookup(pool, 1)
        let admin = try PostgresConnection(connectionString: url)
        defer { admin.close() }
        _ = try admin.query("SELECT pg_terminate_backend(\(first.pid)::int)")
        _ = await TestDatabase.eventually {
            (try? admin.query("SELECT count(*) AS n FROM pg_stat_activity WHERE pid = \(first.pid)::int")
                .first?.decode("n", as: Int.self)) == 0
        }
        let second = try await lookup(pool, 2)
        #expect(second.value == 3 && second.pid != first.pid && second.prepared == 1)
    }

    @Test(.enabled(if: canRunClusters)) func statementsArePreparedAgainAfterAServerRestart() async throws {
        let directory = "/tmp/prepared-test-\(UUID().uuidString.prefix(8).lowercased())"
        let cluster = try Cluster(directory: directory, port: Cluster.freePort(), options: .init(durable: false))
        defer { try? cluster.remove() }
        _ = try cluster.initializeIfNeeded()
        try cluster.start()
        let pool = PostgresPool(
            configuration: .init(connectionString: cluster.connectionURL(), size: 2, connectTimeout: .seconds(2)))
        defer { pool.shutdown() }
        for value in 0..<10 {
            #expect(try await lookup(pool, value).value == value + 1)
        }
        try cluster.stop(mode: .fast)
        await #expect(throws: PostgresError.self) { _ = try await lookup(pool, 0) }
        try cluster.start()
        try cluster.waitUntilAccepting()
        // The old sessions and their prepared statements are gone; the pool reconnects and prepares anew.
        for value in 0..<10 {
            let result = try await lookup(pool, value)
            #expect(result.value == value + 1 && result.prepared == 1)
        }
        let inTransaction = try await pool.transaction { connection in
            try connection.query("SELECT \(41)::int + 1 AS next").first?.decode("next", as: Int.self)
        }
        #expect(inTransaction == 42)
    }
}
