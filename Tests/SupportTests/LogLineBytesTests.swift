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
