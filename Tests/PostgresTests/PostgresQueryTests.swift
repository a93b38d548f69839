import Foundation
import Testing

@testable import Postgres

@Suite("PostgresQuery rendering")
struct PostgresQueryTests {
    @Test func interpolatedValuesBecomeNumberedParameters() {
        let id = 42
        let name = "O'Brien"
        let query: PostgresQuery = "SELECT * FROM t WHERE id = \(id) AND name = \(name) LIMIT 1"
        #expect(query.sql == "SELECT * FROM t WHERE id = $1 AND name = $2 LIMIT 1")
        #expect(query.binds == ["42", "O'Brien"])
    }

    @Test func optionalNilIsNull() {
        let missing: String? = nil
        let present: Int? = 7
        let query: PostgresQuery = "INSERT INTO t VALUES (\(missing), \(present))"
        #expect(query.sql == "INSERT INTO t VALUES ($1, $2)")
        #expect(query.binds == [nil, "7"])
    }

    @Test func literalsAreKeptVerbatim() {
        let query: PostgresQuery = "SELECT '$1', 'it''s' -- comment"
        #expect(query.sql == "SELECT '$1', 'it''s' -- comment")
        #expect(query.binds.isEmpty)
        let raw = PostgresQuery(unsafeSQL: "CREATE TABLE x (a int); CREATE INDEX ON x (a)")
        #expect(raw.sql == "CREATE TABLE x (a int); CREATE INDEX ON x (a)")
        #expect(raw.binds.isEmpty)
    }

    @Test func hostileStringsStayParameters() {
        let hostile = "'; DROP TABLE x; --"
        let query: PostgresQuery = "SELECT \(hostile)"
        #expect(query.sql == "SELECT $1")
        #expect(query.binds == [hostile])
    }

    @Test func everyEncodableTypeRenders() throws {
        let uuid = try #require(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))
        let date = Date(timeIntervalSince1970: 1_796_027_550.123456)
        let query: PostgresQuery = """
            SELECT \(true), \(Int32(-5)), \(Int64(1) << 40), \(1.5), \(date), \([UInt8]([0, 15, 255])), \
            \(Data([1, 2])), \(uuid), \(["a", "b c"])
            """
        #expect(query.sql == "SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9")
        #expect(
            query.binds == [
                "true", "-5", "1099511627776", "1.5", "2026-11-30T08:32:30.123456Z", "\\x000fff", "\\x0102",
                "e621e1f8-c36c-495a-93fc-0c247a3e6e5f", #"{"a","b c"}"#,
            ]
        )
    }

    @Test func doubleSpecialValues() {
        #expect(Double.nan.postgresText == "NaN")
        #expect(Double.infinity.postgresText == "Infinity")
        #expect((-Double.infinity).postgresText == "-Infinity")
        #expect(0.1.postgresText == "0.1")
    }
}

@Suite("PostgresError")
struct PostgresErrorTests {
    @Test func descriptionIsGeneric() {
        let error = PostgresError(
            .queryFailed,
            sqlState: "23505",
            constraintName: "users_email_key",
            detail: "Key (email)=(secret@example.com) already exists."
        )
        #expect(error.description == "PostgresError(code: queryFailed, sqlState: 23505)")
        #expect(!"\(error)".contains("secret"))
        #expect(error.debugDescription.contains("users_email_key"))
        #expect(!error.isUnavailable)
    }

    @Test func unavailableCodes() {
        for code in [PostgresError.Code.connectionFailed, .connectionLost, .timedOut, .poolExhausted, .poolTimeout] {
            #expect(PostgresError(code).isUnavailable)
        }
        for code in [PostgresError.Code.queryFailed, .decodingFailed] {
            #expect(!PostgresError(code).isUnavailable)
        }
    }

    /// Server errors about the server or its setup are "unavailable" (503); errors about the statement are not.
    @Test(arguments: [
        "08P01", "08006", "40001", "40P01", "53300", "57014", "57P01", "57P03", "58030", "XX000", "25006", "42501",
        "55P03", "26000", "42P05",
    ])
    func serverStatesThatMeanUnavailable(_ state: String) {
        #expect(PostgresError(.queryFailed, sqlState: state).isUnavailable)
    }

    @Test(arguments: ["23505", "23503", "22P02", "42601", "42703", "42P01", "0A000", "25P02"])
    func serverStatesAboutTheStatement(_ state: String) {
        #expect(!PostgresError(.queryFailed, sqlState: state).isUnavailable)
    }

    @Test func scrubRemovesSecrets() {
        let text = PostgresError.scrub("Key (token)=(abcdef) exists; pw hunter2", removing: ["abcdef", "hunter2", "1"])
        #expect(text == "Key (token)=(<redacted>) exists; pw <redacted>")
    }
}
