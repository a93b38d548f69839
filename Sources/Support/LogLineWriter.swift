import Foundation

/// Writes one log line's JSON text into a fixed buffer, for the lines written on every request.
///
/// Appending to a `[UInt8]` piece by piece (a uniqueness and a capacity check per piece, a copy of each short
/// string) was most of the request log line's cost. This writer copies into memory it was handed, checking only
/// the room left; a line that does not fit sets ``overflowed`` and stops writing, and the caller then writes it
/// the general way. The text is the same as ``LogRecord/jsonLine``'s for the same values.
///
/// Only Support makes writers, over memory that outlives the writer's use (a scratch buffer on the stack).
public struct LogLineWriter {
    private let start: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    /// Bytes written so far.
    private var count = 0
    /// Whether a write did not fit; the line is then incomplete.
    public private(set) var overflowed = false

    init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
        start = buffer.baseAddress ?? UnsafeMutablePointer(bitPattern: 1)!
        capacity = buffer.count
    }

    /// The line as a newline-terminated whole, for the buffer.
    var written: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: start, count: count) }

    private mutating func room(_ needed: Int) -> Bool {
        guard !overflowed, capacity - count >= needed else {
            overflowed = true
            return false
        }
        return true
    }

    private mutating func byte(_ value: UInt8) {
        guard room(1) else { return }
        start[count] = value
        count += 1
    }

    private mutating func copy(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let base = bytes.baseAddress, room(bytes.count) else { return }
        (start + count).update(from: base, count: bytes.count)
        count += bytes.count
    }

    /// Text known at compile time (keys, punctuation), as it is.
    public mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { copy($0) }
    }

    /// A JSON string literal, quotes included: the text of ``JSONText/quoted(_:)``.
    public mutating func quoted(_ text: String) {
        byte(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            var from = 0
            for index in 0..<utf8.count {
                let value = utf8[index]
                guard value < 0x20 || value == 0x22 || value == 0x5C else { continue }
                copy(UnsafeBufferPointer(rebasing: utf8[from..<index]))
                from = index + 1
                switch value {
                case 0x22: raw(#"\""#)
                case 0x5C: raw(#"\\"#)
                case 0x0A: raw(#"\n"#)
                case 0x0D: raw(#"\r"#)
                case 0x09: raw(#"\t"#)
                default:
                    raw(#"\u00"#)
                    byte(Self.hexDigit(value >> 4))
                    byte(Self.hexDigit(value & 0x0F))
                }
            }
            copy(UnsafeBufferPointer(rebasing: utf8[from...]))
        }
        byte(UInt8(ascii: "\""))
    }

    /// An integer in decimal: the text of `String(value)`.
    public mutating func int(_ value: Int) {
        if value < 0 { byte(UInt8(ascii: "-")) }
        unsigned(UInt64(value.magnitude), width: 1)
    }

    /// At least `width` decimal digits of `value`, zero-padded.
    mutating func unsigned(_ value: UInt64, width: Int) {
        var digits = 1
        var probe = value
        while probe >= 10 {
            probe /= 10
            digits += 1
        }
        let total = max(digits, width)
        guard room(total) else { return }
        var index = count + total
        var rest = value
        for _ in 0..<total {
            index -= 1
            start[index] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        }
        count += total
    }

    /// A number as ``Logger/Value/double(_:)`` renders it: `String(value)`, or `null` when not finite.
    ///
    /// A non-negative value that is a whole number of hundredths below 10^10 (a duration in milliseconds rounded
    /// to 0.01) is written from its integer hundredths: `String` prints the shortest text that reads back as the
    /// same `Double`, and below 2^46 no text shorter than the exact hundredths does (the values' spacing is
    /// under 0.01/2^6), so both print the same digits, with at least one after the point. Tests compare the two.
    public mutating func double(_ value: Double) {
        guard value.isFinite else { return raw("null") }
        let hundredths = (value * 100).rounded()
        if value.sign == .plus, hundredths < 1e12, hundredths / 100 == value {
            let whole = UInt64(hundredths)
            unsigned(whole / 100, width: 1)
            byte(UInt8(ascii: "."))
            let fraction = whole % 100
            if fraction == 0 {
                byte(UInt8(ascii: "0"))
            } else if fraction % 10 == 0 {
                byte(UInt8(ascii: "0") + UInt8(fraction / 10))
            } else {
                unsigned(fraction, width: 2)
            }
            return
        }
        var text = String(value)
        text.withUTF8 { copy($0) }
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }
}

extension LogFields {
    /// The text ``appendJSON(to:)`` writes (`,"key":value...`), or nil when it is over 4 KiB; for tests.
    public func jsonFieldsText() -> String? {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 4096) { buffer in
            var writer = LogLineWriter(buffer)
            appendJSON(to: &writer)
            return writer.overflowed ? nil : String(decoding: writer.written, as: UTF8.self)
        }
    }
}

extension LogRecord {
    /// Writes the line of a record whose metadata is `fields` (``jsonLine``'s text for `fields.metadata`) and a
    /// newline.
    static func writeJSONLine<Fields: LogFields>(
        time: Date, level: Logger.Level, label: String, message: String, fields: Fields, to writer: inout LogLineWriter
    ) {
        writer.raw(#"{"time":""#)
        RFC3339.write(time, to: &writer)
        writer.raw(#"","level":""#)
        switch level {
        case .debug: writer.raw("debug")
        case .info: writer.raw("info")
        case .warning: writer.raw("warning")
        case .error: writer.raw("error")
        }
        writer.raw(#"","logger":"#)
        writer.quoted(label)
        writer.raw(#","msg":"#)
        writer.quoted(message)
        fields.appendJSON(to: &writer)
        writer.raw("}\n")
    }
}

extension RFC3339 {
    /// Writes ``string(from:)``'s text.
    static func write(_ date: Date, to writer: inout LogLineWriter) {
        let (year, month, day, millisOfDay) = parts(of: date)
        let seconds = millisOfDay / 1000
        if year < 0 { writer.int(Int(year)) } else { writer.unsigned(UInt64(year), width: 4) }
        writer.raw("-")
        writer.unsigned(UInt64(month), width: 2)
        writer.raw("-")
        writer.unsigned(UInt64(day), width: 2)
        writer.raw("T")
        writer.unsigned(UInt64(seconds / 3600), width: 2)
        writer.raw(":")
        writer.unsigned(UInt64(seconds / 60 % 60), width: 2)
        writer.raw(":")
        writer.unsigned(UInt64(seconds % 60), width: 2)
        writer.raw(".")
        writer.unsigned(UInt64(millisOfDay % 1000), width: 3)
        writer.raw("Z")
    }
}
