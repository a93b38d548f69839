import Foundation
import Testing

@testable import Postgres

@Suite("Text encoding and decoding")
struct PostgresCodingTests {
    @Test func textArrayQuotingAndEscaping() throws {
        #expect([String]().postgresText == "{}")
        #expect(["a", "b c"].postgresText == #"{"a","b c"}"#)
        #expect(["say \"hi\"", #"back\slash"#].postgresText == #"{"say \"hi\"","back\\slash"}"#)
        let tricky = ["", "NULL", "null", "a,b", "{x}", " padded ", "\"", "\\", "é☃", "line\nbreak"]
        #expect(try [String](postgresText: try #require(tricky.postgresText)) == tricky)
    }

    @Test func textArrayParsesServerOutput() throws {
        #expect(try [String](postgresText: "{}") == [])
        #expect(try [String](postgresText: #"{a,"b c",""}"#) == ["a", "b c", ""])
        #expect(try [String](postgresText: #"{"NULL","a\"b","c\\d"}"#) == ["NULL", "a\"b", "c\\d"])
        #expect(try [String](postgresText: #"{ a , b }"#) == ["a", "b"])
        // Parsed byte by byte: multi-byte characters pass through whole, quoted or not, and `null` in any case
        // is NULL only unquoted.
        #expect(try [String](postgresText: #"{"é,ü",ñandú,"nULl"}"#) == ["é,ü", "ñandú", "nULl"])
        #expect(throws: PostgresError.self) { try [String](postgresText: "{a,nUlL}") }
    }

    @Test(arguments: ["", "a,b", "{a", "{a,NULL}", "{{a},{b}}", "[0:1]={a,b}", #"{"a}"#, "{a,}"])
    func textArrayRejectsBadInput(_ text: String) {
        #expect(throws: PostgresError.self) { try [String](postgresText: text) }
    }

    @Test func byteaHex() throws {
        #expect([UInt8]([0, 1, 0xab, 255]).postgresText == "\\x0001abff")
        #expect(Data().postgresText == "\\x")
        #expect(try [UInt8](postgresText: "\\x0001ABff") == [0, 1, 0xab, 255])
        #expect(try Data(postgresText: "\\x") == Data())
        let all = [UInt8](0...255)
        #expect(try [UInt8](postgresText: try #require(all.postgresText)) == all)
    }

    @Test func byteaEscapeForm() throws {
        #expect(try [UInt8](postgresText: #"a\\b\001\377"#) == [97, 92, 98, 1, 255])
    }

    @Test(arguments: ["\\x0", "\\xzz", "\\x0g", #"a\9"#, #"\"#])
    func byteaRejectsBadInput(_ text: String) {
        #expect(throws: PostgresError.self) { try [UInt8](postgresText: text) }
    }

    @Test func timestampFormat() {
        #expect(Date(timeIntervalSince1970: 0).postgresText == "1970-01-01T00:00:00.000000Z")
        #expect(Date(timeIntervalSince1970: -0.5).postgresText == "1969-12-31T23:59:59.500000Z")
        #expect(Date(timeIntervalSince1970: 951_782_400).postgresText == "2000-02-29T00:00:00.000000Z")
    }

    @Test func timestampParsesServerOutput() throws {
        let expected = Date(timeIntervalSince1970: 1_796_027_550.123456)
        let parsed = try Date(postgresText: "2026-11-30 08:32:30.123456+00")
        #expect(abs(parsed.timeIntervalSince(expected)) < 1e-6)
        #expect(try Date(postgresText: "2026-11-30 08:32:30+00") == Date(timeIntervalSince1970: 1_796_027_550))
        #expect(try Date(postgresText: "2026-11-30 14:02:30+05:30") == Date(timeIntervalSince1970: 1_796_027_550))
        #expect(try Date(postgresText: "2026-11-30T08:32:30Z") == Date(timeIntervalSince1970: 1_796_027_550))
        #expect(try Date(postgresText: "2026-11-30 08:32:30") == Date(timeIntervalSince1970: 1_796_027_550))
        #expect(try Date(postgresText: "2026-11-30 08:32:30.1+00") == Date(timeIntervalSince1970: 1_796_027_550.1))
        #expect(try Date(postgresText: "infinity") == .distantFuture)
    }

    @Test func timestampRoundTripsAtMicrosecondPrecision() throws {
        for seconds in [-2_208_988_800.000001, -1.25, 0, 86_399.999999, 1_796_027_550.123456, 32_503_680_000.5] {
            let date = Date(timeIntervalSince1970: seconds)
            let back = try Date(postgresText: try #require(date.postgresText))
            #expect(abs(back.timeIntervalSince1970 - seconds) < 1e-6, "\(seconds)")
        }
    }

    @Test(arguments: [
        "", "2026-13-01 00:00:00+00", "2026-11-30", "2026-11-30 08:32:30+0x", "yesterday",
        "2026-11-30 08:32:30.+00", "2026-11-30 08:32:30+00 extra",
    ])
    func timestampRejectsBadInput(_ text: String) {
        #expect(throws: PostgresError.self) { try Date(postgresText: text) }
    }

    @Test func scalars() throws {
        #expect(try Bool(postgresText: "t") == true)
        #expect(try Bool(postgresText: "f") == false)
        #expect(throws: PostgresError.self) { try Bool(postgresText: "yes please") }
        #expect(try Int(postgresText: "-12") == -12)
        #expect(throws: PostgresError.self) { try Int(postgresText: "1.5") }
        #expect(throws: PostgresError.self) { try Int32(postgresText: "3000000000") }
        #expect(try Int64(postgresText: "9223372036854775807") == .max)
        #expect(try Double(postgresText: "1e-05") == 1e-05)
        #expect(try Double(postgresText: "NaN").isNaN)
        #expect(try Double(postgresText: "-Infinity") == -.infinity)
        #expect(throws: PostgresError.self) { try Double(postgresText: "abc") }
        let uuid = try UUID(postgresText: "e621e1f8-c36c-495a-93fc-0c247a3e6e5f")
        #expect(uuid.uuidString == "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")
        #expect(throws: PostgresError.self) { try UUID(postgresText: "not-a-uuid") }
    }

    /// Rows decode from libpq's bytes (``PostgresDecodable/init(postgresBytes:)``), not from a `String` per value:
    /// the byte parsers must agree with the text ones, including at the edges.
    @Test func rowValuesDecodeFromBytes() throws {
        let values: [String?] = [
            "-9223372036854775808", "9223372036854775808", "", "t", "f", "true",
            "2026-11-30 08:32:30.1234565+00", "2026-11-30 08:32:30.999999951+00", "-infinity", "", nil, "{a,\"b c\"}",
        ]
        let columns = values.indices.map { "c\($0)" }
        let row = try #require(PostgresRows(storage: PostgresRowStorage(columns: columns, values: values, rowCount: 1), affectedRows: 1).first)
        #expect(try row.decode(0, as: Int64.self) == .min)
        #expect(throws: PostgresError.self) { try row.decode(1, as: Int64.self) }  // one past Int64.max
        #expect(throws: PostgresError.self) { try row.decode(2, as: Int.self) }  // empty is not a number
        #expect(try row.decode(3, as: Bool.self) == true)
        #expect(try row.decode(4, as: Bool.self) == false)
        #expect(try row.decode(5, as: Bool.self) == true)
        let rounded = try row.decode(6, as: Date.self).timeIntervalSince1970
        #expect(abs(rounded - 1_796_027_550.123457) < 1e-7)  // rounded on the seventh digit
        #expect(try row.decode(7, as: Date.self) == Date(timeIntervalSince1970: 1_796_027_551))
        #expect(try row.decode(8, as: Date.self) == .distantPast)
        #expect(try row.decode(9, as: String?.self) == "")  // an empty value is not NULL
        #expect(try row.decode(10, as: String?.self) == nil)
        #expect(try row.decode(11, as: [String].self) == ["a", "b c"])
        #expect(try row.decode(7, as: String.self) == "2026-11-30 08:32:30.999999951+00")
    }

    @Test func rowDecodingByNameAndIndex() throws {
        let storage = PostgresRowStorage(columns: ["id", "name", "id"], values: ["1", nil, "2"], rowCount: 1)
        let rows = PostgresRows(storage: storage, affectedRows: 1)
        let row = try #require(rows.first)
        #expect(rows.count == 1)
        #expect(rows.columns == ["id", "name", "id"])
        #expect(try row.decode("id", as: Int.self) == 1)
        #expect(try row.decode(2, as: Int.self) == 2)
        #expect(try row.decode("name", as: String?.self) == nil)
        let name: String? = try row.decode("name")
        #expect(name == nil)
        #expect(throws: PostgresError.self) { try row.decode("name", as: String.self) }
        #expect(throws: PostgresError.self) { try row.decode("missing", as: String.self) }
        #expect(throws: PostgresError.self) { try row.decode(3, as: String?.self) }
        #expect(throws: PostgresError.self) { try row.decode("id", as: Bool.self) }
    }
}
