/// A JSON value whose objects keep their key order, as Graph's responses do.
///
/// Written the way Graph writes JSON (PHP-style): `/` is escaped as `\/` and every non-ASCII character as a
/// `\uXXXX` escape, so clients are exercised on both. ``parse(_:)`` is a strict RFC 8259 parser used for control
/// API bodies.
enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.int(let a), .int(let b)): return a == b
        case (.double(let a), .double(let b)): return a == b
        case (.string(let a), .string(let b)): return a == b
        case (.array(let a), .array(let b)): return a == b
        case (.object(let a), .object(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    /// The value for `key` in an object, or nil.
    subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == key }?.1
    }

    /// The string, when this is one.
    var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The integer, when this is an integral number.
    var intValue: Int64? {
        switch self {
        case .int(let value): return value
        case .double(let value) where value.rounded() == value && abs(value) < 9e15: return Int64(value)
        default: return nil
        }
    }

    /// The number as a double, when this is a number.
    var doubleValue: Double? {
        switch self {
        case .int(let value): return Double(value)
        case .double(let value): return value
        default: return nil
        }
    }

    /// The boolean, when this is one.
    var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The elements, when this is an array.
    var arrayValue: [JSONValue]? {
        if case .array(let values) = self { return values }
        return nil
    }

    /// The members, when this is an object.
    var objectValue: [(String, JSONValue)]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// Whether this is `null`.
    var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// An array of strings.
    static func strings(_ values: [String]) -> JSONValue {
        .array(values.map { .string($0) })
    }

    // MARK: Writing

    /// The compact JSON text.
    var text: String {
        var out = ""
        write(to: &out)
        return out
    }

    /// The compact JSON text as UTF-8 bytes.
    var bytes: [UInt8] { Array(text.utf8) }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .int(let value): out += String(value)
        case .double(let value):
            out +=
                value.isFinite
                ? (value.rounded() == value && abs(value) < 1e15 ? String(Int64(value)) : "\(value)") : "null"
        case .string(let value): Self.writeString(value, to: &out)
        case .array(let values):
            out += "["
            for (index, value) in values.enumerated() {
                if index > 0 { out += "," }
                value.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, member) in members.enumerated() {
                if index > 0 { out += "," }
                Self.writeString(member.0, to: &out)
                out += ":"
                member.1.write(to: &out)
            }
            out += "}"
        }
    }

    private static func writeString(_ value: String, to out: inout String) {
        out += "\""
        for unit in value.utf16 {
            switch unit {
            case 0x22: out += "\\\""
            case 0x5C: out += "\\\\"
            case 0x2F: out += "\\/"
            case 0x0A: out += "\\n"
            case 0x0D: out += "\\r"
            case 0x09: out += "\\t"
            case 0x20..<0x7F: out.unicodeScalars.append(Unicode.Scalar(UInt8(unit)))
            default:
                let hex = String(unit, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            }
        }
        out += "\""
    }

    // MARK: Parsing

    /// Parses JSON text strictly: one value, optional surrounding whitespace, valid UTF-8, no trailing data,
    /// nesting at most 64 deep. Returns nil on any error.
    static func parse(_ bytes: [UInt8]) -> JSONValue? {
        guard String(strictUTF8: bytes) != nil else { return nil }
        var parser = JSONParser(bytes: bytes)
        guard let value = parser.parseValue(depth: 0) else { return nil }
        parser.skipWhitespace()
        return parser.atEnd ? value : nil
    }
}

extension String {
    /// Decodes bytes as UTF-8, returning nil when they are not valid UTF-8.
    init?(strictUTF8 bytes: [UInt8]) {
        var result = ""
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        loop: while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): result.unicodeScalars.append(scalar)
            case .emptyInput: break loop
            case .error: return nil
            }
        }
        self = result
    }
}
