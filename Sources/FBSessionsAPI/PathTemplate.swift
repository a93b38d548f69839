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

    /// The result of matching a path.
    public enum Match: Sendable {
        /// Matched, with the decoded parameters.
        case matched([String: String])
        /// Another path.
        case noMatch
        /// The right shape, but a parameter is not validly percent-encoded UTF-8.
        case badEncoding
    }

    /// Matches a raw (percent-encoded) path, decoding each parameter on its own, so that `%2F` inside an owner
    /// stays part of that owner instead of splitting the path.
    public func match(_ rawPath: String) -> Match {
        guard rawPath.hasPrefix("/") else { return .noMatch }
        return match(segments: Self.segments(of: rawPath))
    }

    /// A raw path's segments after the leading `/`, split once for matching against every template.
    static func segments(of rawPath: String) -> ArraySlice<Substring> {
        rawPath.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
    }

    /// Matches a path already split by ``segments(of:)``.
    func match(segments parts: ArraySlice<Substring>) -> Match {
        guard parts.count == segments.count else { return .noMatch }
        var parameters: [String: String] = [:]
        for (segment, part) in zip(segments, parts) {
            switch segment {
            case .literal(let text):
                guard part == text else { return .noMatch }
            case .parameter(let name):
                guard !part.isEmpty else { return .noMatch }
                guard let decoded = PercentDecoding.decode(part, plusIsSpace: false) else { return .badEncoding }
                parameters[name] = decoded
            }
        }
        return .matched(parameters)
    }
}

/// Strict percent-decoding: `%` must be followed by two hex digits and the result must be UTF-8.
public enum PercentDecoding {
    /// Decodes, or nil when the text is malformed.
    public static func decode(_ text: Substring, plusIsSpace: Bool) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
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
