import Foundation

/// A picture URL that passed ``PictureURLPolicy``: its scheme, host and port are known exactly, so what is
/// checked is what gets fetched.
public struct PictureURL: Sendable, Hashable, CustomStringConvertible {
    /// `https`, or `http` when the policy allows it.
    public let scheme: String
    /// The host, lowercased.
    public let host: String
    /// The port, when the URL names one.
    public let port: Int?
    /// The path and query (starting with `/`), without a fragment.
    public let pathAndQuery: String

    /// The URL to fetch: scheme, authority, path and query, rebuilt from the checked parts.
    public var text: String {
        scheme + "://" + host + (port.map { ":\($0)" } ?? "") + pathAndQuery
    }

    /// Scheme, host and port only: the query of a CDN URL carries signatures and ids, so it stays out of logs.
    public var description: String {
        scheme + "://" + host + (port.map { ":\($0)" } ?? "")
    }

    /// The URL's own expiry: `ext` (unix seconds, `platform-lookaside.fbsbx.com`) or `oe` (hex unix seconds,
    /// `scontent*.fbcdn.net`), docs/facebook-graph.md §5.3. Nil when it names none.
    public var expiresAt: Date? {
        guard let question = pathAndQuery.firstIndex(of: "?") else { return nil }
        for pair in pathAndQuery[pathAndQuery.index(after: question)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { continue }
            if parts[0] == "ext", let seconds = Int64(parts[1]), seconds > 0 {
                return Date(timeIntervalSince1970: TimeInterval(seconds))
            }
            if parts[0] == "oe", let seconds = Int64(parts[1], radix: 16), seconds > 0 {
                return Date(timeIntervalSince1970: TimeInterval(seconds))
            }
        }
        return nil
    }
}

/// Which picture URLs the service may fetch: `https` only (plus `http` when `FBS_PICTURE_ALLOW_HTTP`), on a host
/// that is, or ends with `.` + one of `FBS_PICTURE_HOSTS`. Anything else is refused before a connection is made.
///
/// The grammar accepted is deliberately narrow, so that this check and libcurl cannot read one URL two ways:
/// printable ASCII only, no user info (`@`), no backslash, no percent-encoding or brackets in the authority, a
/// host of letters, digits, dots and hyphens, an optional numeric port. A fragment is dropped.
public struct PictureURLPolicy: Sendable, Equatable {
    /// Allowed host suffixes, lowercased (`fbcdn.net` allows `fbcdn.net` and `scontent-lax3-1.xx.fbcdn.net`).
    public let hostSuffixes: [String]
    /// Whether plain `http` is allowed too (loopback tests and the sandbox).
    public let allowsHTTP: Bool

    /// Longest URL accepted.
    public static let maxLength = 4096

    /// Creates a policy.
    /// - Parameters:
    ///   - hostSuffixes: allowed host suffixes (`FBS_PICTURE_HOSTS`); case and a leading dot are ignored.
    ///   - allowsHTTP: whether `http` URLs are allowed (`FBS_PICTURE_ALLOW_HTTP`).
    public init(hostSuffixes: [String], allowsHTTP: Bool) {
        self.hostSuffixes = hostSuffixes.map { suffix in
            var lowered = suffix.lowercased().trimmingCharacters(in: .whitespaces)
            while lowered.hasPrefix(".") { lowered.removeFirst() }
            return lowered
        }.filter { !$0.isEmpty }
        self.allowsHTTP = allowsHTTP
    }

    /// Checks an absolute URL.
    /// - Parameter text: the URL as Graph (or a redirect) gave it.
    /// - Returns: the checked URL.
    /// - Throws: ``PictureError/refused(_:)`` saying which rule it broke.
    public func check(_ text: String) throws -> PictureURL {
        guard text.utf8.count <= Self.maxLength,
            text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\\") })
        else { throw PictureError.refused(.malformedURL) }
        guard let separator = text.range(of: "://") else { throw PictureError.refused(.malformedURL) }
        let scheme = text[..<separator.lowerBound].lowercased()
        guard scheme == "https" || (scheme == "http" && allowsHTTP) else { throw PictureError.refused(.scheme) }
        let rest = text[separator.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let (host, port) = try Self.authority(rest[..<authorityEnd])
        guard isAllowed(host: host) else { throw PictureError.refused(.host) }
        var tail = String(rest[authorityEnd...])
        if let hash = tail.firstIndex(of: "#") { tail = String(tail[..<hash]) }
        if !tail.hasPrefix("/") { tail = "/" + tail }
        return PictureURL(scheme: scheme, host: host, port: port, pathAndQuery: tail)
    }

    /// Resolves a redirect's `Location` against the URL that answered it, then checks the result.
    /// - Parameters:
    ///   - location: the `Location` value (absolute, scheme-relative, or a path).
    ///   - base: the URL that redirected.
    /// - Returns: the checked target.
    /// - Throws: ``PictureError/refused(_:)`` when the target breaks a rule.
    public func resolve(_ location: String, against base: PictureURL) throws -> PictureURL {
        let trimmed = location.trimmingCharacters(in: .whitespaces)
        if trimmed.contains("://") { return try check(trimmed) }
        if trimmed.hasPrefix("//") { return try check(base.scheme + ":" + trimmed) }
        let origin = base.scheme + "://" + base.host + (base.port.map { ":\($0)" } ?? "")
        if trimmed.hasPrefix("/") { return try check(origin + trimmed) }
        let path = base.pathAndQuery.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        let directory = path.lastIndex(of: "/").map { path[...$0] } ?? "/"
        return try check(origin + directory + trimmed)
    }

    /// Whether `host` (lowercased) is an allowed suffix or ends with `.` + one. An IPv4 address matches only
    /// itself (`10.127.0.0.1` does not end in the host `127.0.0.1`).
    ///
    /// A host whose last label is numeric or hexadecimal-looking (`127.1`, `2130706433`, `0x7f000001`,
    /// `1.2.3.0x4`) is read as an IPv4 address by resolvers and URL parsers, so it too matches only itself; and an
    /// allowed entry that is an address (`127.0.0.1`) allows only that host, never `x.127.0.0.1`.
    public func isAllowed(host: String) -> Bool {
        let isAddress = Self.looksNumeric(host)
        return hostSuffixes.contains { host == $0 || (!isAddress && !Self.looksNumeric($0) && host.hasSuffix("." + $0)) }
    }

    /// Whether `host` is one of `FBS_PICTURE_HOSTS` itself (not only by suffix): such a host is the operator's
    /// explicit choice, fetched whatever it resolves to; a host allowed by suffix must resolve to public addresses.
    public func isListedExactly(host: String) -> Bool {
        hostSuffixes.contains(host)
    }

    /// Whether the last label of `host` is all digits or starts with `0x`: the shapes that resolvers and URL
    /// parsers read as (part of) an IPv4 address.
    static func looksNumeric(_ host: String) -> Bool {
        guard let last = host.split(separator: ".", omittingEmptySubsequences: false).last else { return false }
        return last.allSatisfy(\.isNumber) || last.hasPrefix("0x")
    }

    /// Parses `host[:port]` strictly.
    private static func authority(_ authority: Substring) throws -> (String, Int?) {
        var hostPart = authority
        var port: Int?
        if let colon = authority.lastIndex(of: ":") {
            let digits = authority[authority.index(after: colon)...]
            guard (1...5).contains(digits.count), digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber),
                let number = Int(digits), (1...65535).contains(number)
            else { throw PictureError.refused(.malformedURL) }
            port = number
            hostPart = authority[..<colon]
        }
        let host = hostPart.lowercased()
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...253).contains(host.utf8.count),
            labels.allSatisfy({ label in
                (1...63).contains(label.utf8.count) && !label.hasPrefix("-") && !label.hasSuffix("-")
                    && label.utf8.allSatisfy { byte in
                        (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D
                    }
            })
        else { throw PictureError.refused(.malformedURL) }
        return (host, port)
    }
}
