/// A route path like `/v1/sessions/{id}`: literal segments and named parameters, one segment each.
public struct PathTemplate: Sendable, Hashable, CustomStringConvertible {
    enum Segment: Sendable, Hashable {
        case literal(String)
        case parameter(String)
    }

    /// The template as written.
    public let description: String
    let segments: [Segment]

    /// Parses a template.
    public init(_ template: String) {
        description = template
        segments = template.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map { part in
            part.hasPrefix("{") && part.hasSuffix("}") ? .parameter(String(part.dropFirst().dropLast())) : .literal(String(part))
        }
    }

    /// Whether the template has no parameter: it matches exactly one path, its own text.
    public var isLiteral: Bool {
        segments.allSatisfy { if case .literal = $0 { true } else { false } }
    }

    /// The number of segments after the leading `/`: a path matches only a template of its own count.
    public var segmentCount: Int { segments.count }

    /// The number of segments of a raw path after its leading `/` (one more than the slashes after it).
    public static func segmentCount(of rawPath: String) -> Int {
        rawPath.utf8.reduce(0) { $0 + ($1 == UInt8(ascii: "/") ? 1 : 0) }
    }

    /// The result of matching a path.
    public enum Match: Sendable {
        /// Matched, with the decoded parameters.
        case matched(PathParameters)
        /// Another path.
        case noMatch
        /// The right shape, but a parameter is not validly percent-encoded UTF-8.
        case badEncoding
    }

    /// Matches a raw (percent-encoded) path over its bytes, decoding each parameter on its own, so that `%2F`
    /// inside an owner stays part of that owner instead of splitting the path. Segments are split at the byte `/`,
    /// which is never part of a longer UTF-8 sequence.
    public func match(_ rawPath: String) -> Match {
        if let matched = rawPath.utf8.withContiguousStorageIfAvailable(match(bytes:)) { return matched }
        return Array(rawPath.utf8).withUnsafeBufferPointer(match(bytes:))
    }

    private func match(bytes path: UnsafeBufferPointer<UInt8>) -> Match {
        let slash = UInt8(ascii: "/")
        guard let first = path.first, first == slash else { return .noMatch }
        var count = 1
        for index in 1..<path.count where path[index] == slash { count += 1 }
        guard count == segments.count else { return .noMatch }
        // Every literal segment first, with nothing decoded: most templates of a path's length differ from it in a
        // literal, and decoding the parameters first would be wasted.
        var start = 1
        for segment in segments {
            var end = start
            while end < path.count, path[end] != slash { end += 1 }
            if case .literal(let text) = segment {
                let part = UnsafeBufferPointer(rebasing: path[start..<end])
                guard text.utf8.count == part.count, text.utf8.elementsEqual(part) else { return .noMatch }
            } else if end == start {
                return .noMatch
            }
            start = end + 1
        }
        var parameters = PathParameters()
        start = 1
        for segment in segments {
            var end = start
            while end < path.count, path[end] != slash { end += 1 }
            if case .parameter(let name) = segment {
                let part = UnsafeBufferPointer(rebasing: path[start..<end])
                guard let decoded = PercentDecoding.decode(bytes: part, plusIsSpace: false) else { return .badEncoding }
                parameters[name] = decoded
            }
            start = end + 1
        }
        return .matched(parameters)
    }
}

/// Strict percent-decoding: `%` must be followed by two hex digits and the result must be UTF-8.
public enum PercentDecoding {
    /// Decodes, or nil when the text is malformed.
    public static func decode(_ text: Substring, plusIsSpace: Bool) -> String? {
        decode(utf8: text.utf8, plusIsSpace: plusIsSpace)
    }

    /// Decodes UTF-8 bytes, or nil when they are malformed.
    static func decode(bytes: UnsafeBufferPointer<UInt8>, plusIsSpace: Bool) -> String? {
        // Nothing to decode (the common case for ids): the bytes only need to be valid UTF-8, which ASCII always is,
        // and `String(decoding:)` makes it without checking again (docs/performance.md, "Parsing"). One pass finds
        // both: an escape, and whether every byte is ASCII.
        var ascii = true
        for byte in bytes {
            if byte == UInt8(ascii: "%") || (byte == UInt8(ascii: "+") && plusIsSpace) {
                return decode(utf8: bytes, plusIsSpace: plusIsSpace)
            }
            if byte >= 0x80 { ascii = false }
        }
        return ascii ? String(decoding: bytes, as: UTF8.self) : String(validating: bytes, as: UTF8.self)
    }

    private static func decode<Bytes: Collection<UInt8>>(utf8 text: Bytes, plusIsSpace: Bool) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count)
        var iterator = text.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                    return nil
                }
                bytes.append(high << 4 | low)
            case UInt8(ascii: "+") where plusIsSpace:
                bytes.append(UInt8(ascii: " "))
            default:
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// `a=1&b=x%20y` as ordered pairs, strictly decoded (`+` is a space). Read over the query's bytes: `&` and `=` are
/// never part of a longer UTF-8 sequence. Empty parts are skipped; a part without `=` has the value "".
public enum QueryString {
    /// Parses a raw query; nil when any part is malformed.
    public static func parse(_ raw: String) -> [(name: String, value: String)]? {
        if raw.isEmpty { return [] }
        if let parsed = raw.utf8.withContiguousStorageIfAvailable(parse(bytes:)) { return parsed }
        return Array(raw.utf8).withUnsafeBufferPointer(parse(bytes:))
    }

    private static func parse(bytes query: UnsafeBufferPointer<UInt8>) -> [(name: String, value: String)]? {
        var pairs: [(name: String, value: String)] = []
        pairs.reserveCapacity(query.reduce(1) { $0 + ($1 == UInt8(ascii: "&") ? 1 : 0) })
        var start = 0
        while start < query.count {
            var end = start
            while end < query.count, query[end] != UInt8(ascii: "&") { end += 1 }
            defer { start = end + 1 }
            guard end > start else { continue }
            let part = UnsafeBufferPointer(rebasing: query[start..<end])
            let equals = part.firstIndex(of: UInt8(ascii: "="))
            let name = UnsafeBufferPointer(rebasing: part[..<(equals ?? part.count)])
            let value = equals.map { UnsafeBufferPointer(rebasing: part[($0 + 1)...]) }
            guard let decodedName = PercentDecoding.decode(bytes: name, plusIsSpace: true),
                let decodedValue = value.map({ PercentDecoding.decode(bytes: $0, plusIsSpace: true) }) ?? ""
            else { return nil }
            pairs.append((decodedName, decodedValue))
        }
        return pairs
    }
}
