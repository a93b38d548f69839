import Foundation
import Testing

@testable import Support

/// The byte-level log line (what the service writes) is the same text as ``LogRecord/jsonLine``.
@Suite struct LogLineBytesTests {
    @Test(arguments: [
        "plain", "", "quote \" and backslash \\", "new\nline\r\ttab", "control \u{01}\u{1F}\u{7F}", "ünïcødé ✓ 🚀",
        "\\u0000 looks escaped",
    ])
    func bytesMatchTheStringLine(text: String) {
        let dates = [
            Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 1_796_000_000.123),
            Date(timeIntervalSince1970: -62_135_596_800), Date(timeIntervalSince1970: 253_402_300_799.999),
        ]
        for date in dates {
            let record = LogRecord(
                time: date, level: .warning, label: "l\(text)", message: text,
                metadata: [
                    "text": .string(text), "n": .int(-42), "d": .double(0.35), "inf": .double(.infinity),
                    "b": .bool(true), text: .int(1),
                ])
            var bytes: [UInt8] = []
            record.appendJSONLine(to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == record.jsonLine + "\n")
        }
    }

    @Test func quotedBytesMatchQuoted() {
        for text in ["a\u{0}b", "\"\"", "é\u{8}"] {
            var bytes: [UInt8] = []
            JSONText.appendQuoted(text, to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == JSONText.quoted(text))
        }
    }
}

/// Fields written in sorted order by hand, as a hot caller does.
private struct SampleFields: LogFields {
    let text: String
    let number: Int
    let fraction: Double

    var metadata: [String: Logger.Value] { ["a_text": .string(text), "b_number": .int(number), "c_fraction": .double(fraction)] }

    func appendJSON(to bytes: inout [UInt8]) {
        JSONText.appendRaw(#","a_text":"#, to: &bytes)
        JSONText.appendQuoted(text, to: &bytes)
        JSONText.appendRaw(#","b_number":"#, to: &bytes)
        JSONText.appendInt(number, to: &bytes)
        JSONText.appendRaw(#","c_fraction":"#, to: &bytes)
        JSONText.appendDouble(fraction, to: &bytes)
    }
}

/// The dictionary-free path (``LogFields``) gives the same line as a record of the same metadata.
@Suite struct LogFieldsTests {
    @Test(arguments: [Int.min, -1, 0, 7, 10, 99, 100, 1_000_000_007, Int.max])
    func fieldsLineMatchesTheRecordLine(number: Int) {
        let time = Date(timeIntervalSince1970: 1_796_000_000.123)
        for fraction in [0, 0.01, 0.35, 12.5, 1234.56, 1e300, Double.infinity, -Double.nan] {
            for level in Logger.Level.allCases {
                let fields = SampleFields(text: "q\"\\\n✓", number: number, fraction: fraction)
                var bytes: [UInt8] = []
                LogRecord.appendJSONLine(time: time, level: level, label: "http", message: "request", fields: fields, to: &bytes)
                let record = LogRecord(time: time, level: level, label: "http", message: "request", metadata: fields.metadata)
                #expect(String(decoding: bytes, as: UTF8.self) == record.jsonLine + "\n")
            }
        }
    }

    @Test func intBytesMatchString() {
        for value in [Int.min, Int.min + 1, -10, -9, 0, 9, 10, 19, 12345, Int.max] {
            var bytes: [UInt8] = []
            JSONText.appendInt(value, to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == String(value))
        }
    }

    @Test func loggerWithMetadataMergesFields() {
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "http", handler: handler)
        logger.log(.info, "request", fields: SampleFields(text: "x", number: 1, fraction: 0.5))
        logger[metadataKey: "z_extra"] = "y"
        logger.log(.info, "request", fields: SampleFields(text: "x", number: 2, fraction: 0.5))
        logger.log(.debug, "request", fields: SampleFields(text: "x", number: 3, fraction: 0.5))
        let records = handler.records
        #expect(records.count == 2)
        #expect(records.first?.metadata == ["a_text": "x", "b_number": 1, "c_fraction": .double(0.5)])
        #expect(records.last?.metadata["z_extra"] == "y" && records.last?.metadata["b_number"] == 2)
    }
}
