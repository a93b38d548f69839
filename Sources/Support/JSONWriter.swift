import Foundation

/// Writes JSON text straight into a byte buffer, for the hot responses (a session, an owner's list) that
/// `JSONEncoder` made slowly (about a fifth of the service's CPU on the status path; docs/performance.md).
///
/// The output is byte-for-byte what `JSONEncoder` with `[.sortedKeys, .withoutEscapingSlashes]` writes for the
/// same values, provided the caller writes keys in sorted order: strings escape `"`, `\`, and control characters
/// as `JSONEncoder` does, everything else is copied as UTF-8. A golden test (SessionJSONTests) compares the two.
public struct JSONWriter: Sendable {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8] = []
    private var needsComma = false

    /// Creates a writer with room for `capacity` bytes.
    public init(capacity: Int = 1024) {
        bytes.reserveCapacity(capacity)
    }

    /// `{`.
    public mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
    }

    /// `}`.
    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    /// `[`.
    public mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
    }

    /// `]`.
    public mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// `"key":` (with a comma before it when needed). Keys are plain ASCII names written by this program.
    public mutating func key(_ name: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// `"key":` for a name this program holds in a `String` (a field's name from a table). Plain ASCII, as
    /// ``key(_:)``'s.
    public mutating func key(named name: String) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: name.utf8)
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// A string value.
    public mutating func string(_ value: String) {
        separate()
        appendQuoted(value)
        needsComma = true
    }

    /// A string value or `null`.
    public mutating func string(_ value: String?) {
        guard let value else { return null() }
        string(value)
    }

    /// A time as an RFC 3339 string (``RFC3339/string(from:)``'s text), written straight into the bytes.
    public mutating func timestamp(_ date: Date) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        RFC3339.append(date, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    /// A time as an RFC 3339 string, or `null`.
    public mutating func timestamp(_ date: Date?) {
        guard let date else { return null() }
        timestamp(date)
    }

    /// An integer value.
    public mutating func int(_ value: Int) {
        separate()
        bytes.append(contentsOf: String(value).utf8)
        needsComma = true
    }

    /// `true` or `false`.
    public mutating func bool(_ value: Bool) {
        separate()
        raw(value ? "true" : "false")
        needsComma = true
    }

    /// `null`.
    public mutating func null() {
        separate()
        raw("null")
        needsComma = true
    }

    /// An array of strings.
    public mutating func strings(_ values: [String]) {
        beginArray()
        for value in values { string(value) }
        endArray()
    }

    private mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    private mutating func appendQuoted(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            var start = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                if start < index { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index])) }
                start = index + 1
                bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\""))
                case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\"))
                case 0x0A: bytes.append(UInt8(ascii: "n"))
                case 0x0D: bytes.append(UInt8(ascii: "r"))
                case 0x09: bytes.append(UInt8(ascii: "t"))
                case 0x08: bytes.append(UInt8(ascii: "b"))
                case 0x0C: bytes.append(UInt8(ascii: "f"))
                default:
                    let digits: StaticString = "0123456789abcdef"
                    bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                    digits.withUTF8Buffer { table in
                        bytes.append(table[Int(byte >> 4)])
                        bytes.append(table[Int(byte & 0x0F)])
                    }
                }
            }
            if start < utf8.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<utf8.count])) }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
