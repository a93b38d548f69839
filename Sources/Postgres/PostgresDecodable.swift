import Foundation

/// A value that can be read from PostgreSQL's text output format.
///
/// `PostgresRow.decode(_:as:)` handles SQL `NULL` itself; conforming types only see non-NULL text.
public protocol PostgresDecodable {
    /// Parses PostgreSQL text output.
    ///
    /// - Parameter postgresText: The column value as PostgreSQL prints it.
    /// - Throws: `PostgresError` with code `.decodingFailed` if the text is not a valid value of this type.
    init(postgresText: String) throws

    /// Parses PostgreSQL text output from the bytes libpq returned, without making a `String` first when the
    /// type can. The default makes the `String` and calls ``init(postgresText:)``.
    ///
    /// - Parameter postgresBytes: The column value as PostgreSQL prints it, UTF-8.
    /// - Throws: `PostgresError` with code `.decodingFailed` if the text is not a valid value of this type.
    init(postgresBytes: PostgresBytes) throws
}

extension PostgresDecodable {
    public init(postgresBytes: PostgresBytes) throws {
        try self.init(postgresText: postgresBytes.text)
    }
}

/// One value's text as libpq returned it, valid only during the decoding call that receives it. Outside this
/// module only its ``text`` can be read; the types this module decodes read the bytes themselves.
public struct PostgresBytes {
    /// The bytes, borrowed from the result's storage.
    let buffer: UnsafeBufferPointer<UInt8>

    /// The value as a `String` (UTF-8).
    public var text: String { String(decoding: buffer, as: UTF8.self) }
}

/// Decimal digits with an optional sign, as PostgreSQL prints integers; nil for anything else or on overflow.
private func parseInteger(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
    var index = 0
    var negative = false
    if let first = bytes.first, first == UInt8(ascii: "-") || first == UInt8(ascii: "+") {
        negative = first == UInt8(ascii: "-")
        index = 1
    }
    guard index < bytes.count else { return nil }
    var value: Int64 = 0
    while index < bytes.count {
        let digit = Int64(bytes[index]) - 48
        guard (0...9).contains(digit) else { return nil }
        let (times, overflowA) = value.multipliedReportingOverflow(by: 10)
        let (sum, overflowB) = negative ? times.subtractingReportingOverflow(digit) : times.addingReportingOverflow(digit)
        guard !overflowA, !overflowB else { return nil }
        value = sum
        index += 1
    }
    return value
}

extension PostgresError {
    /// The error for a value that does not parse as `type`. The value itself is left out: it may be secret.
    static func cannotDecode(_ type: Any.Type) -> PostgresError {
        PostgresError(.decodingFailed, detail: "value is not a valid \(type)")
    }
}

extension String: PostgresDecodable {
    /// The text as is.
    public init(postgresText: String) throws {
        self = postgresText
    }

    public init(postgresBytes: PostgresBytes) throws {
        self = postgresBytes.text
    }
}

extension Int: PostgresDecodable {
    /// Parses decimal digits (int2, int4, int8).
    public init(postgresText: String) throws {
        guard let value = Int(postgresText) else { throw PostgresError.cannotDecode(Int.self) }
        self = value
    }

    public init(postgresBytes: PostgresBytes) throws {
        guard let value = parseInteger(postgresBytes.buffer) else { throw PostgresError.cannotDecode(Int.self) }
        self = Int(value)
    }
}

extension Int32: PostgresDecodable {
    /// Parses decimal digits (int2, int4).
    public init(postgresText: String) throws {
        guard let value = Int32(postgresText) else { throw PostgresError.cannotDecode(Int32.self) }
        self = value
    }
}

extension Int64: PostgresDecodable {
    /// Parses decimal digits (int2, int4, int8).
    public init(postgresText: String) throws {
        guard let value = Int64(postgresText) else { throw PostgresError.cannotDecode(Int64.self) }
        self = value
    }

    public init(postgresBytes: PostgresBytes) throws {
        guard let value = parseInteger(postgresBytes.buffer) else { throw PostgresError.cannotDecode(Int64.self) }
        self = value
    }
}

extension Bool: PostgresDecodable {
    /// Parses `t` or `f` (PostgreSQL's output), also `true` or `false`.
    public init(postgresText: String) throws {
        switch postgresText {
        case "t", "true": self = true
        case "f", "false": self = false
        default: throw PostgresError.cannotDecode(Bool.self)
        }
    }

    public init(postgresBytes: PostgresBytes) throws {
        if postgresBytes.buffer.count == 1 {
            switch postgresBytes.buffer[0] {
            case UInt8(ascii: "t"): self = true
            case UInt8(ascii: "f"): self = false
            default: throw PostgresError.cannotDecode(Bool.self)
            }
        } else {
            try self.init(postgresText: postgresBytes.text)
        }
    }
}

extension Double: PostgresDecodable {
    /// Parses float4, float8 or numeric output, including `NaN`, `Infinity` and `-Infinity`.
    public init(postgresText: String) throws {
        switch postgresText {
        case "NaN": self = .nan
        case "Infinity": self = .infinity
        case "-Infinity": self = -.infinity
        default:
            guard let value = Double(postgresText), value.isFinite else {
                throw PostgresError.cannotDecode(Double.self)
            }
            self = value
        }
    }
}

extension Date: PostgresDecodable {
    /// Parses timestamptz or timestamp output in ISO style, such as `2026-11-30 08:32:30.123456+00`.
    /// A timestamp without an offset is read as UTC; `infinity` and `-infinity` become
    /// `Date.distantFuture` and `Date.distantPast`.
    public init(postgresText: String) throws {
        self = try PostgresTimestamp.parse(postgresText)
    }

    public init(postgresBytes: PostgresBytes) throws {
        self = try PostgresTimestamp.parse(postgresBytes.buffer)
    }
}

extension Array: PostgresDecodable where Element: PostgresArrayElement {
    /// For `[UInt8]`: bytea output. For `[String]`: text[] output such as `{a,"b c"}`.
    public init(postgresText: String) throws {
        self = try Element.postgresArray(from: postgresText)
    }

    public init(postgresBytes: PostgresBytes) throws {
        self = try Element.postgresArray(fromBytes: postgresBytes)
    }
}

extension Data: PostgresDecodable {
    /// Parses bytea output in hex (`\x…`) or escape form.
    public init(postgresText: String) throws {
        self = Data(try PostgresBytea.decode(postgresText))
    }
}

extension UUID: PostgresDecodable {
    /// Parses uuid output.
    public init(postgresText: String) throws {
        guard let value = UUID(uuidString: postgresText) else { throw PostgresError.cannotDecode(UUID.self) }
        self = value
    }
}
