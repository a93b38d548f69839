import Foundation
import Postgres
import Testing

@Suite("PostgresConnection against a real database", .enabled(if: TestDatabase.isEnabled))
struct PostgresConnectionTests {
    private func connect(statementTimeout: Duration? = .seconds(10)) throws -> PostgresConnection {
        try PostgresConnection(connectionString: try TestDatabase.requireURL(), statementTimeout: statementTimeout)
    }

    /// Sends `value` as `$1::type` and decodes it back.
    private func roundTrip<T: PostgresEncodable & PostgresDecodable>(
        _ value: T,
        _ type: String,
        on connection: PostgresConnection
    ) throws -> T? {
        var query = PostgresQuery(unsafeSQL: "SELECT $1::\(type) AS v")
        query.binds = [value.postgresText]
        let rows = try connection.query(query)
        return try rows.first?.decode("v", as: T?.self)
    }

    @Test func everyEncodableTypeRoundTrips() throws {
        let connection = try connect()
        defer { connection.close() }
        #expect(try roundTrip("héllo ☃ 'quoted' \"x\" \\", "text", on: connection) == "héllo ☃ 'quoted' \"x\" \\")
        #expect(try roundTrip("", "text", on: connection) == "")
        #expect(try roundTrip(Int.max, "int8", on: connection) == .max)
        #expect(try roundTrip(Int32.min, "int4", on: connection) == .min)
        #expect(try roundTrip(Int64(-1) << 50, "int8", on: connection) == -1 << 50)
        #expect(try roundTrip(true, "bool", on: connection) == true)
        #expect(try roundTrip(false, "bool", on: connection) == false)
        for double in [3.141592653589793, 1e-300, -2.5e300, 0.1, Double.infinity, -Double.infinity] {
            #expect(try roundTrip(double, "float8", on: connection) == double)
        }
        #expect(try roundTrip(Double.nan, "float8", on: connection)?.isNaN == true)
        let date = Date(timeIntervalSince1970: 1_796_027_550.123456)
        let back = try #require(try roundTrip(date, "timestamptz", on: connection))
        #expect(abs(back.timeIntervalSince(date)) < 1e-6)
        let old = Date(timeIntervalSince1970: -1_234_567_890.5)
        #expect(try roundTrip(old, "timestamptz", on: connection) == old)
        #expect(try roundTrip([UInt8](0...255), "bytea", on: connection) == [UInt8](0...255))
        #expect(try roundTrip([UInt8](), "bytea", on: connection) == [])
        #expect(try roundTrip(Data([0, 0xde, 0xad]), "bytea", on: connection) == Data([0, 0xde, 0xad]))
        let uuid = UUID()
        #expect(try roundTrip(uuid, "uuid", on: connection) == uuid)
        let strings = ["", "NULL", "a,b", "{x}", " padded ", "say \"hi\"", #"back\slash"#, "é☃", "line\nbreak"]
        #expect(try roundTrip(strings, "text[]", on: connection) == strings)
        #expect(try roundTrip([String](), "text[]", on: connection) == [])
        let missing: String? = nil
        #expect(try connection.query("SELECT \(missing)::text IS NULL AS n").first?.decode("n", as: Bool.self) == true)
    }

    @Test func serverOutputDecodes() throws {
        let connection = try connect()
        defer { connection.close() }
        let row = try #require(
            try connection.query(
                """
                SELECT timestamptz '2026-11-30 10:32:30.5+02' AS t, ARRAY['a', 'b c', NULL] AS a,
                       ARRAY['x', 'y'] AS b, 12::int2 AS s, 1.5::numeric AS n, NULL::int AS z
                """
            ).first
        )
        #expect(try row.decode("t", as: Date.self) == Date(timeIntervalSince1970: 1_796_027_550.5))
        #expect(throws: PostgresError.self) { try row.decode("a", as: [String].self) }
        #expect(try row.decode("b", as: [String].self) == ["x", "y"])
        #expect(try row.decode("s", as: Int.self) == 12)
        #expect(try row.decode("n", as: Double.self) == 1.5)
        #expect(try row.decode("z", as: Int?.self) == nil)
        #expect(throws: PostgresError.self) { try row.decode("z", as: Int.self) }
    }

    @Test func injectionAttemptStaysData() throws {
        let connection = try connect()
        defer { connection.close() }
        try connection.simpleQuery(unsafeSQL: "CREATE TEMP TABLE x (v text)")
        let hostile = "'; DROP TABLE x; --"
        #expect(try connection.execute("INSERT INTO x (v) VALUES (\(hostile))") == 1)
        let rows = try connection.query("SELECT v FROM x WHERE v = \(hostile)")
        #expect(try rows.map { try $0.decode("v", as: String.self) } == [hostile])
        #expect(try connection.query("SELECT count(*) AS n FROM x").first?.decode("n", as: Int.self) == 1)
    }

    @Test func transactionsCommitAndRollBack() throws {
        let connection = try connect()
        defer { connection.close() }
        try connection.simpleQuery(unsafeSQL: "CREATE TEMP TABLE t (v int)")
        try connection.transaction { connection in
            try connection.execute("INSERT INTO t VALUES (\(1))")
        }
        struct Boom: Error {}
        #expect(throws: Boom.self) {
            try connection.transaction { connection in
                try connection.execute("INSERT INTO t VALUES (\(2))")
                throw Boom()
            }
        }
        // A failed statement swallowed inside the body: COMMIT becomes ROLLBACK and the call throws.
        let error = #expect(throws: PostgresError.self) {
            try connection.transaction { connection in
                try connection.execute("INSERT INTO t VALUES (\(3))")
                _ = try? connection.execute("SELECT 1/0")
            }
        }
        #expect(error?.sqlState == "25P02")
        let values = try connection.query("SELECT v FROM t ORDER BY v").map { try $0.decode("v", as: Int.self) }
        #expect(values == [1])
        #expect(connection.isUsable)
    }

    @Test func statementTimeoutCancelsLongQueries() throws {
        let connection = try connect(statementTimeout: .milliseconds(200))
        defer { connection.close() }
        let error = #expect(throws: PostgresError.self) { try connection.query("SELECT pg_sleep(\(5.0))") }
        #expect(error?.code == .queryFailed)
        #expect(error?.sqlState == "57014")
        // A statement the server gave up on is the database failing now, not the request: 503, not 500.
        #expect(error?.isUnavailable == true)
        #expect(try connection.query("SELECT 1 AS one").first?.decode("one", as: Int.self) == 1)
    }

    @Test func serverErrorsAreScrubbed() throws {
        let connection = try connect()
        defer { connection.close() }
        try connection.simpleQuery(unsafeSQL: "CREATE TEMP TABLE u (email text UNIQUE)")
        let secret = "very-secret-value@example.com"
        try connection.execute("INSERT INTO u VALUES (\(secret))")
        let error = #expect(throws: PostgresError.self) { try connection.execute("INSERT INTO u VALUES (\(secret))") }
        #expect(error?.sqlState == "23505")
        #expect(error?.constraintName == "u_email_key")
        #expect(error.map { !$0.description.contains(secret) && !$0.debugDescription.contains(secret) } == true)
        #expect(error?.debugDescription.contains("duplicate key") == true)
        let cast = #expect(throws: PostgresError.self) { try connection.query("SELECT \(secret)::uuid") }
        #expect(cast?.sqlState == "22P02")
        #expect(cast.map { !$0.debugDescription.contains(secret) } == true)
    }

    @Test func resultFacts() throws {
        let connection = try connect()
        defer { connection.close() }
        let rows = try connection.query("SELECT g AS n, g * 2 AS n FROM generate_series(1, 3) g")
        #expect(rows.count == 3)
        #expect(rows.affectedRows == 3)
        #expect(rows.columns == ["n", "n"])
        #expect(try rows.map { try $0.decode(1, as: Int.self) } == [2, 4, 6])
        let empty = try connection.query("SELECT 1 AS one WHERE false")
        #expect(empty.isEmpty && empty.columns == ["one"] && empty.affectedRows == 0)
        #expect(try connection.query("SELECT FROM generate_series(1, 3)").count == 3)
        let multi = try connection.simpleQuery(unsafeSQL: "CREATE TEMP TABLE m (a int); INSERT INTO m VALUES (1), (2)")
        #expect(multi.affectedRows == 2)
        #expect(try connection.execute("UPDATE m SET a = a + \(1)") == 2)
        #expect(throws: PostgresError.self) { try connection.query("SELECT \("nul\u{0}byte")") }
        #expect(connection.isUsable)
    }

    @Test func refusedConnectionFailsFastWithoutLeakingThePassword() throws {
        let clock = ContinuousClock()
        let start = clock.now
        let error = #expect(throws: PostgresError.self) {
            try PostgresConnection(connectionString: "postgresql://app:Sup3rS3cretPw@127.0.0.1:1/db")
        }
        #expect(clock.now - start < .seconds(6))
        #expect(error?.code == .connectionFailed)
        #expect(error?.isUnavailable == true)
        #expect(error.map { "\($0)".contains("Sup3rS3cretPw") } == false)
        #expect(error?.debugDescription.contains("Sup3rS3cretPw") == false)
        let invalid = #expect(throws: PostgresError.self) {
            try PostgresConnection(connectionString: "host=localhost password=Sup3rS3cretPw bogus")
        }
        #expect(invalid.map { !$0.debugDescription.contains("Sup3rS3cretPw") } == true)
    }

    @Test func closeIsIdempotent() throws {
        let connection = try connect()
        connection.close()
        connection.close()
        #expect(!connection.isUsable)
        let error = #expect(throws: PostgresError.self) { try connection.query("SELECT 1") }
        #expect(error?.code == .connectionLost)
    }

    /// A bare Sync (the exact cache's fence) runs nothing and leaves the connection as it found it: out of
    /// pipeline mode, idle, and able to run statements; on a closed or killed connection it throws.
    @Test func aSyncRoundTripRunsNothingAndLeavesTheConnectionAsItWas() throws {
        let connection = try connect()
        defer { connection.close() }
        let pid = try #require(try connection.query("SELECT pg_backend_pid() AS pid").first?.decode("pid", as: Int.self))
        for _ in 0..<3 { try connection.synchronize() }
        #expect(connection.isUsable)
        #expect(try connection.query("SELECT 41 + 1 AS n").first?.decode("n", as: Int.self) == 42)
        try connection.transaction { inner in
            _ = try inner.query("SELECT 1")
        }

        let killer = try connect()
        defer { killer.close() }
        _ = try killer.query("SELECT pg_terminate_backend(\(pid))")
        let lost = #expect(throws: PostgresError.self) {
            for _ in 0..<50 {
                try connection.synchronize()
                Thread.sleep(forTimeInterval: 0.02)
            }
        }
        #expect(lost?.code == .connectionLost)
        #expect(!connection.isUsable)
        connection.close()
        let closed = #expect(throws: PostgresError.self) { try connection.synchronize() }
        #expect(closed?.code == .connectionLost)
    }
}
