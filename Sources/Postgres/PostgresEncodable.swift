import Foundation

/// A value that can be sent to PostgreSQL as a text-format parameter.
///
/// Conforming types produce the text PostgreSQL's input function for the target type accepts; `nil` means
/// SQL `NULL`. Values are only ever sent as parameters, never spliced into SQL (see `PostgresQuery`).
public protocol PostgresEncodable: Sendable {
    /// The PostgreSQL text representation, or `nil` for SQL `NULL`.
    var postgresText: String? { get }
}

extension String: PostgresEncodable {
    /// The string itself (text, varchar, or any type whose input accepts it).
    public var postgresText: String? { self }
}

extension Int: PostgresEncodable {
    /// Decimal digits (int8).
    public var postgresText: String? { String(self) }
}

extension Int32: PostgresEncodable {
    /// Decimal digits (int4).
    public var postgresText: String? { String(self) }
}

extension Int64: PostgresEncodable {
    /// Decimal digits (int8).
    public var postgresText: String? { String(self) }
}

extension Bool: PostgresEncodable {
    /// `true` or `false`.
    public var postgresText: String? { self ? "true" : "false" }
}

extension Double: PostgresEncodable {
    /// The shortest text that reads back as the same value (float8); `NaN`, `Infinity` and `-Infinity`
    /// for the special values.
    public var postgresText: String? {
        if isNaN {
            return "NaN"
        }
        if isInfinite {
            return self < 0 ? "-Infinity" : "Infinity"
        }
        return description
    }
}

extension Date: PostgresEncodable {
    /// RFC 3339 in UTC with microseconds, for example `2026-11-30T08:32:30.123456Z` (timestamptz).
    public var postgresText: String? { PostgresTimestamp.format(self) }
}

extension Array: PostgresEncodable where Element: PostgresArrayElement {
    /// For `[UInt8]`: bytea in hex form, `\x0aff`. For `[String]`: a text[] literal, `{"a","b c"}`.
    public var postgresText: String? { Element.postgresText(of: self) }
}

extension Data: PostgresEncodable {
    /// bytea in hex form, `\x0aff`.
    public var postgresText: String? { PostgresBytea.encode(self) }
}

extension UUID: PostgresEncodable {
    /// The lowercase canonical form (uuid).
    public var postgresText: String? { uuidString.lowercased() }
}

extension Optional: PostgresEncodable where Wrapped: PostgresEncodable {
    /// The wrapped value's text, or `nil` (SQL `NULL`) when there is none.
    public var postgresText: String? {
        switch self {
        case .some(let value): value.postgresText
        case .none: nil
        }
    }
}

/// An element type whose arrays have a PostgreSQL text form: `UInt8` (bytea) and `String` (text[]).
///
/// This protocol only exists so that `[UInt8]` and `[String]` can both conform to `PostgresEncodable`
/// and `PostgresDecodable`; do not conform other types to it.
public protocol PostgresArrayElement: Sendable {
    /// The text form of an array of this element type.
    ///
    /// - Parameter array: The values.
    /// - Returns: The PostgreSQL text.
    static func postgresText(of array: [Self]) -> String

    /// Parses the text form of an array of this element type.
    ///
    /// - Parameter text: The PostgreSQL text output.
    /// - Returns: The values.
    /// - Throws: `PostgresError` with code `.decodingFailed` if the text is malformed.
    static func postgresArray(from text: String) throws -> [Self]

    /// ``postgresArray(from:)`` over the bytes libpq returned. The default makes a `String` first.
    static func postgresArray(fromBytes bytes: PostgresBytes) throws -> [Self]
}

extension PostgresArrayElement {
    public static func postgresArray(fromBytes bytes: PostgresBytes) throws -> [Self] {
        try postgresArray(from: bytes.text)
    }
}

extension UInt8: PostgresArrayElement {
    /// bytea in hex form.
    public static func postgresText(of array: [UInt8]) -> String {
        PostgresBytea.encode(array)
    }

    /// Parses bytea output in hex (`\x…`) or escape form.
    public static func postgresArray(from text: String) throws -> [UInt8] {
        try PostgresBytea.decode(text)
    }
}

extension String: PostgresArrayElement {
    /// A text[] literal with every element quoted and `"` and `\` escaped.
    public static func postgresText(of array: [String]) -> String {
        PostgresTextArray.encode(array)
    }

    /// Parses text[] output such as `{a,"b c"}`; a `NULL` element or a nested array throws.
    public static func postgresArray(from text: String) throws -> [String] {
        try PostgresTextArray.decode(text)
    }

    public static func postgresArray(fromBytes bytes: PostgresBytes) throws -> [String] {
        try PostgresTextArray.decode(bytes.buffer)
    }
}
