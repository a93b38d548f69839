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
            let written = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { buffer in
                var writer = LogLineWriter(buffer)
                writer.quoted(text)
                return String(decoding: writer.written, as: UTF8.self)
            }
            #expect(written == JSONText.quoted(text))
        }
    }
}

/// Fields written in sorted order by hand, as a hot caller does.
private struct SampleFields: LogFields {
    let text: String
    let number: Int
    let fraction: Double

    var metadata: [String: Logger.Value] { ["a_text": .string(text), "b_number": .int(number), "c_fraction": .double(fraction)] }

    func appendJSON(to writer: inout LogLineWriter) {
        writer.raw(#","a_text":"#)
        writer.quoted(text)
        writer.raw(#","b_number":"#)
        writer.int(number)
        writer.raw(#","c_fraction":"#)
        writer.double(fraction)
    }
}

/// The dictionary-free path (``LogFields`` through ``LogLineWriter``) gives the same line as a record of the
/// same metadata.
@Suite struct LogFieldsTests {
    private func line(_ fields: SampleFields, time: Date, level: Logger.Level, capacity: Int = 1024) -> String? {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { buffer in
            var writer = LogLineWriter(buffer)
            LogRecord.writeJSONLine(time: time, level: level, label: "http", message: "request", fields: fields, to: &writer)
            return writer.overflowed ? nil : String(decoding: writer.written, as: UTF8.self)
        }
    }

    @Test(arguments: [Int.min, -1, 0, 7, 10, 99, 100, 1_000_000_007, Int.max])
    func fieldsLineMatchesTheRecordLine(number: Int) {
        let dates = [
            Date(timeIntervalSince1970: 1_796_000_000.123), Date(timeIntervalSince1970: 0),
            Date(timeIntervalSince1970: -62_135_596_800),
            Date(timeIntervalSince1970: 253_402_300_799.999),
        ]
        for time in dates {
            for fraction in [0, -0.0, 0.01, 0.35, 12.5, 1234.56, 1e300, 1e-7, -3.25, Double.infinity, -Double.nan] {
                for level in Logger.Level.allCases {
                    let fields = SampleFields(text: "q\"\\\n\u{01}✓", number: number, fraction: fraction)
                    let record = LogRecord(time: time, level: level, label: "http", message: "request", metadata: fields.metadata)
                    #expect(line(fields, time: time, level: level) == record.jsonLine + "\n")
                }
            }
        }
    }

    @Test func numbersMatchString() {
        var doubles: [Double] = [0, -0.0, 0.01, 0.1, 0.05, 0.5, 1, 9.99, 10, 100.01, 99_999_999.99, 1e9, 1e10, 1e11, 1e12, 5e-5, 0.001]
        for n in 0..<20_000 { doubles.append(Double(n) / 100) }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 { doubles.append(Double(UInt64.random(in: 0..<1_000_000_000_000, using: &generator)) / 100) }
        for _ in 0..<20_000 { doubles.append((Double.random(in: 0..<30, using: &generator) * 1e5).rounded() / 100) }
        for value in doubles {
            let text = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { buffer in
                var writer = LogLineWriter(buffer)
                writer.double(value)
                return String(decoding: writer.written, as: UTF8.self)
            }
            #expect(text == String(value), "\(value)")
        }
        for value in [Int.min, Int.min + 1, -10, -9, 0, 9, 10, 19, 12345, Int.max] {
            let text = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { buffer in
                var writer = LogLineWriter(buffer)
                writer.int(value)
                return String(decoding: writer.written, as: UTF8.self)
            }
            #expect(text == String(value))
        }
    }

    @Test func aLineTooLongForTheBufferOverflows() {
        let fields = SampleFields(text: String(repeating: "\u{01}", count: 200), number: 1, fraction: 1)
        #expect(line(fields, time: Date(), level: .info, capacity: 1024) == nil)
        #expect(line(fields, time: Date(), level: .info, capacity: 4096) != nil)
        #expect(fields.jsonFieldsText()?.hasPrefix(#","a_text":"\u0001"#) == true)
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
