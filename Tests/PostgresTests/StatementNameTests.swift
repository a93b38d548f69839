import Foundation
import Support
import Testing
import TestSupport

@testable import Postgres

/// A statement name stands for one SQL text only, in every process; what the server refuses before running it
/// (26000, 42P05, 08P01) is run again, never read as an answer, and the connection is replaced.
@Suite("Statement names and refusals", .serialized)
struct StatementNameTests {
    @Test func aNameIsFNV1a128OfTheTextAndFitsAnIdentifier() {
        // The published FNV-1a 128-bit test vectors for "" and "a".
        #expect(PostgresStatementName.of("") == "fbs_6c62272e07bb014262b821756295c58d")
        #expect(PostgresStatementName.of("a") == "fbs_d228cb696f1a8caf78912b704e4a8964")
        let name = PostgresStatementName.of("SELECT $1::int AS one")
        #expect(name == PostgresStatementName.of("SELECT $1::int AS one"))
        #expect(name.utf8.count == 36 && name.utf8.count <= 63)
        #expect(name.dropFirst(4).allSatisfy { $0.isHexDigit && !$0.isUppercase })
    }

    @Test func differentTextsGetDifferentNames() {
        var texts = (0..<20_000).map { "SELECT $1::int + \($0) AS n" }
        texts += ["SELECT 1", "SELECT 1 ", " SELECT 1", "select 1", "SELECT  1", "SELECT 1;"]
        #expect(Set(texts.map(PostgresStatementName.of)).count == texts.count)
    }

    @Test func theCacheNeverGivesOneNameToASecondText() {
        var cache = PostgresStatementCache()
        let first = "SELECT 1 AS a"
        let second = "SELECT 2 AS a"
        // As if `second`'s name had been taken by `first` (a collision): `second` is then never prepared by name.
        _ = cache.insert(first, name: PostgresStatementName.of(second), preparedHere: true)
        #expect(cache.reserve(second) == nil)
        #expect(cache.reserve(first) == PostgresStatementName.of(first))
        #expect(cache.prepared(PostgresStatementName.of(second)))
    }

    private func pool(_ mode: PostgresPreparedStatements, detected: Locked<[String]>? = nil) throws -> PostgresPool {
        var configuration = PostgresPool.Configuration(
            connectionString: try TestDatabase.requireURL(), size: 1, applicationName: "statement-name-tests",
            preparedStatements: mode)
        configuration.onTransactionPoolerDetected = { evidence in detected?.withLock { $0.append(evidence) } }
        return PostgresPool(configuration: configuration)
    }

    private func backendPID(_ pool: PostgresPool) async throws -> Int {
        try #require(try await pool.query("SELECT pg_backend_pid() AS pid").first?.decode("pid", as: Int.self))
    }

    @Test(.enabled(if: TestDatabase.isEnabled)) func theServerHoldsTheStatementUnderTheNameOfItsText() async throws {
        let first = try pool(.always)
        let second = try pool(.always)
        defer {
            first.shutdown()
            second.shutdown()
        }
        let sql = "SELECT name FROM pg_prepared_statements WHERE statement = $1"
        for pool in [first, second] {
            let rows = try await pool.query("SELECT name FROM pg_prepared_statements WHERE statement = \(sql)")
            #expect(try rows.first?.decode("name", as: String.self) == PostgresStatementName.of(sql))
        }
    }

    @Test(.enabled(if: TestDatabase.isEnabled)) func aStatementGoneFromTheSessionRunsAgainAndTheConnectionIsReplaced()
        async throws
    {
        let detected = Locked<[String]>([])
        let pool = try pool(.automatic, detected: detected)
        defer { pool.shutdown() }
        let lookup: PostgresQuery = "SELECT \(41)::int + 1 AS next"
        #expect(try await pool.query(lookup).first?.decode("next", as: Int.self) == 42)
        let before = try await backendPID(pool)
        // Behind the cache's back, as a pooler handing this client another server session would.
        _ = try await pool.withConnection { connection in try connection.simpleQuery(unsafeSQL: "DEALLOCATE ALL") }
        #expect(try await pool.query(lookup).first?.decode("next", as: Int.self) == 42)
        #expect(try await backendPID(pool) != before, "the connection that saw 26000 was closed")
        let evidence = detected.withLock { $0 }
        #expect(evidence.count == 1 && evidence.first?.contains("26000") == true)
        #expect(!pool.preparesStatements, "an automatic pool stops preparing once it has seen the evidence")
        #expect(try await pool.query(lookup).first?.decode("next", as: Int.self) == 42)
    }

    @Test(.enabled(if: TestDatabase.isEnabled)) func aStatementAlreadyInTheSessionIsTheSameTextAndIsUsed()
        async throws
    {
        let detected = Locked<[String]>([])
        let pool = try pool(.always, detected: detected)
        defer { pool.shutdown() }
        let query: PostgresQuery = "SELECT \(21)::int * 2 AS doubled"
        let name = PostgresStatementName.of(query.sql)
        let (value, pid) = try await pool.withConnection { connection in
            // What another client of a shared server session would have left there: this very text.
            try connection.simpleQuery(unsafeSQL: "PREPARE \(name)(int) AS \(query.sql)")
            let rows = try connection.query(query)
            let pid = try connection.query("SELECT pg_backend_pid() AS pid").first?.decode("pid", as: Int.self)
            return (try rows.first?.decode("doubled", as: Int.self), pid)
        }
        #expect(value == 42)
        #expect(try await backendPID(pool) != pid, "the connection that saw 42P05 was closed")
        #expect(pool.preparesStatements && detected.withLock({ $0 }).isEmpty, "an explicit choice is never changed")
    }

    @Test(.enabled(if: TestDatabase.isEnabled)) func aNameHoldingAnotherParameterCountIsRefusedNeverRun() async throws {
        let pool = try pool(.always)
        defer { pool.shutdown() }
        let query: PostgresQuery = "SELECT \(2)::int + \(3)::int AS total"
        let name = PostgresStatementName.of(query.sql)
        let total = try await pool.withConnection { connection in
            // A forged statement under this text's name, with one parameter: Bind with two is a protocol violation
            // (08P01), refused before anything runs, and the statement goes again unnamed.
            try connection.simpleQuery(unsafeSQL: "PREPARE \(name)(int) AS SELECT -1000 * $1::int AS total")
            return try connection.query(query).first?.decode("total", as: Int.self)
        }
        #expect(total == 5)
    }

    @Test(.enabled(if: TestDatabase.isEnabled)) func aRefusalInsideATransactionRunsTheTransactionOnceMore()
        async throws
    {
        let pool = try pool(.always)
        defer { pool.shutdown() }
        let table = "refusal_\(UInt32.random(in: 0...UInt32.max))"
        try await pool.execute(PostgresQuery(unsafeSQL: "CREATE TABLE \(table) (v int)"))
        let lookup: PostgresQuery = "SELECT \(1)::int AS one"
        try await pool.withConnection { connection in
            _ = try connection.query(lookup)
            try connection.simpleQuery(unsafeSQL: "DEALLOCATE ALL")
        }
        let runs = Locked(0)
        let insert = PostgresQuery(unsafeSQL: "INSERT INTO \(table) VALUES (7)")
        let one = try await pool.transaction { connection in
            runs.withLock { $0 += 1 }
            try connection.execute(insert)
            return try connection.query(lookup).first?.decode("one", as: Int.self)
        }
        #expect(one == 1 && runs.withLock({ $0 }) == 2, "the aborted transaction ran once more, on a fresh connection")
        let count = try await pool.query(PostgresQuery(unsafeSQL: "SELECT count(*) AS n FROM \(table)"))
        #expect(try count.first?.decode("n", as: Int.self) == 1, "the aborted attempt committed nothing")
        try await pool.execute(PostgresQuery(unsafeSQL: "DROP TABLE \(table)"))
    }
}
