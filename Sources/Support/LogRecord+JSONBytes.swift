import Foundation

/// A record's JSON line written straight into bytes: building it as a `String` (concatenation, a
/// `unicodeScalars` walk per value) was a quarter of the CPU of a `/healthz` request (docs/performance.md).
extension LogRecord {
    /// Appends the record's line (``jsonLine``'s text) and a newline to `bytes`.
    func appendJSONLine(to bytes: inout [UInt8]) {
        Self.appendJSONHead(time: time, level: level, label: label, message: message, to: &bytes)
        for key in metadata.keys.sorted() {
            bytes.append(UInt8(ascii: ","))
            JSONText.appendQuoted(key, to: &bytes)
            bytes.append(UInt8(ascii: ":"))
            switch metadata[key] {
            case .string(let text): JSONText.appendQuoted(text, to: &bytes)
            case .int(let number): JSONText.appendInt(number, to: &bytes)
            case .double(let number): JSONText.appendDouble(number, to: &bytes)
            case .bool(let flag): bytes.append(contentsOf: (flag ? "true" : "false").utf8)
            case nil: bytes.append(contentsOf: "null".utf8)
            }
        }
        bytes.append(contentsOf: "}\n".utf8)
    }

    /// Appends a line's start, `{"time":...,"level":...,"logger":...,"msg":...`, without the metadata.
    static func appendJSONHead(time: Date, level: Logger.Level, label: String, message: String, to bytes: inout [UInt8]) {
        JSONText.appendRaw(#"{"time":""#, to: &bytes)
        RFC3339.append(time, to: &bytes)
        JSONText.appendRaw(#"","level":""#, to: &bytes)
        switch level {
        case .debug: JSONText.appendRaw("debug", to: &bytes)
        case .info: JSONText.appendRaw("info", to: &bytes)
        case .warning: JSONText.appendRaw("warning", to: &bytes)
        case .error: JSONText.appendRaw("error", to: &bytes)
        }
        JSONText.appendRaw(#"","logger":"#, to: &bytes)
        JSONText.appendQuoted(label, to: &bytes)
        JSONText.appendRaw(#","msg":"#, to: &bytes)
        JSONText.appendQuoted(message, to: &bytes)
    }
}

extension JSONText {
    /// Appends `text` as a JSON string literal, quotes included, to `bytes`: the same text as ``quoted(_:)``.
    /// Bytes of multi-byte UTF-8 characters are copied as they are; only `"`, `\` and control characters are
    /// escaped.
    public static func appendQuoted(_ text: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            var start = 0
            for (index, byte) in utf8.enumerated() where byte < 0x20 || byte == 0x22 || byte == 0x5C {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index]))
                start = index + 1
                switch byte {
                case 0x22: bytes.append(contentsOf: #"\""#.utf8)
                case 0x5C: bytes.append(contentsOf: #"\\"#.utf8)
                case 0x0A: bytes.append(contentsOf: #"\n"#.utf8)
                case 0x0D: bytes.append(contentsOf: #"\r"#.utf8)
                case 0x09: bytes.append(contentsOf: #"\t"#.utf8)
                default:
                    bytes.append(contentsOf: #"\u00"#.utf8)
                    bytes.append(hexDigit(byte >> 4))
                    bytes.append(hexDigit(byte & 0x0F))
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends text known at compile time (keys, punctuation), as it is.
    static func appendRaw(_ text: StaticString, to bytes: inout [UInt8]) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// Appends an integer in decimal, the same text as `String(value)`, without making a `String`.
    static func appendInt(_ value: Int, to bytes: inout [UInt8]) {
        var magnitude = value.magnitude
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for the 20 digits of UInt64.max
        withUnsafeMutableBytes(of: &digits) { buffer in
            var index = buffer.count
            repeat {
                index -= 1
                buffer[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[index...]))
        }
    }

    /// Appends a number as ``Logger/Value/double(_:)`` renders it: `String(value)`, or `null` when not finite.
    static func appendDouble(_ value: Double, to bytes: inout [UInt8]) {
        guard value.isFinite else { return appendRaw("null", to: &bytes) }
        // A short `String` is stored inline (no allocation); its UTF-8 view is copied as it is.
        var text = String(value)
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }
}
