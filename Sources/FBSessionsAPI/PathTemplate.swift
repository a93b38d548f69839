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

    /// The result of matching a path.
    public enum Match: Sendable {
        /// Matched, with the decoded parameters.
        case matched(PathParameters)
        /// Another path.
        case noMatch
        /// The right shape, but a parameter is not validly percent-encoded UTF-8.
        case badEncoding
    }

    /// Matches a raw (percent-encoded) path, decoding each parameter on its own, so that `%2F` inside an owner
    /// stays part of that owner instead of splitting the path.
    public func match(_ rawPath: String) -> Match {
        var bytes = rawPath
        let ascii: Match? = bytes.withUTF8 { $0.allSatisfy { $0 < 0x80 } ? match(ascii: $0) : nil }
        if let ascii { return ascii }
        return rawPath.hasPrefix("/") ? match(segments: Self.segments(of: rawPath)) : .noMatch
    }

    /// Matches a raw ASCII path's bytes in place: the same answer as ``match(segments:)`` on the split path, with
    /// no `Substring` array (splitting every request's path was 3% of a `/healthz` request). Paths with other
    /// bytes go through ``match(segments:)``: there `/` followed by a combining mark is one `Character`, not a
    /// separator.
    func match(ascii path: UnsafeBufferPointer<UInt8>) -> Match {
        let slash = UInt8(ascii: "/")
        guard let first = path.first, first == slash else { return .noMatch }
        // The segment count first, as the split version compares it before looking at any segment.
        var count = 1
        for index in 1..<path.count where path[index] == slash { count += 1 }
        guard count == segments.count else { return .noMatch }
        // Every literal segment first, with nothing decoded: most templates of a path's length differ from it in a
        // literal (`/v1/sessions/{id}/token` for a picture's path), and decoding the parameters before finding that
        // out made a string and a dictionary per template tried.
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

    /// A raw path's segments after the leading `/`.
    static func segments(of rawPath: String) -> ArraySlice<Substring> {
        rawPath.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
    }

    /// Matches a path already split by ``segments(of:)``.
    func match(segments parts: ArraySlice<Substring>) -> Match {
        guard parts.count == segments.count else { return .noMatch }
        // The literals first, as ``match(ascii:)`` does.
        for (segment, part) in zip(segments, parts) {
            switch segment {
            case .literal(let text): guard part == text else { return .noMatch }
            case .parameter: guard !part.isEmpty else { return .noMatch }
            }
        }
        var parameters = PathParameters()
        for (segment, part) in zip(segments, parts) {
            guard case .parameter(let name) = segment else { continue }
            guard let decoded = PercentDecoding.decode(part, plusIsSpace: false) else { return .badEncoding }
            parameters[name] = decoded
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
        // Nothing to decode (the common case for ids): the bytes only need to be valid UTF-8. ASCII always is, and
        // `String(decoding:)` makes it in a third of the time of `String(validating:)` (60 ns against 23 for an id,
        // measured with `swiftc -O`). One pass finds both: an escape, and whether every byte is ASCII.
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

/// `a=1&b=x%20y` as ordered pairs, strictly decoded (`+` is a space).
public enum QueryString {
    /// Parses a raw query; nil when any part is malformed.
    public static func parse(_ raw: String) -> [(name: String, value: String)]? {
        if raw.isEmpty { return [] }
        var bytes = raw
        let parsed = bytes.withUTF8 { query -> (ascii: Bool, pairs: [(name: String, value: String)]?) in
            query.allSatisfy { $0 < 0x80 } ? (true, parse(ascii: query)) : (false, nil)
        }
        return parsed.ascii ? parsed.pairs : parseCharacters(raw)
    }

    /// ``parse(_:)`` on an ASCII query's bytes in place: the same answer as splitting the string (`&` and `=` are
    /// never part of a longer `Character` in ASCII), without a `Substring` per part or a grapheme walk; the split
    /// was 3.5% of a status request's CPU. Other queries go through ``parseCharacters(_:)``.
    static func parse(ascii query: UnsafeBufferPointer<UInt8>) -> [(name: String, value: String)]? {
        var pairs: [(name: String, value: String)] = []
        // One allocation for the pairs, not one per doubling: most queries have one to three.
        pairs.reserveCapacity(query.reduce(1) { $0 + ($1 == UInt8(ascii: "&") ? 1 : 0) })
        var start = 0
        while start < query.count {
            var end = start
            while end < query.count, query[end] != UInt8(ascii: "&") { end += 1 }
            defer { start = end + 1 }
            guard end > start else { continue }  // Empty parts are skipped, as the split omits them.
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

    /// ``parse(_:)`` by splitting the string into `Character`s: for queries with bytes outside ASCII.
    static func parseCharacters(_ raw: String) -> [(name: String, value: String)]? {
        var pairs: [(name: String, value: String)] = []
        for part in raw.split(separator: "&", omittingEmptySubsequences: true) {
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = PercentDecoding.decode(pieces[0], plusIsSpace: true),
                let value = pieces.count > 1 ? PercentDecoding.decode(pieces[1], plusIsSpace: true) : ""
            else { return nil }
            pairs.append((name, value))
        }
        return pairs
    }
}
