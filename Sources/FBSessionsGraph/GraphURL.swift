import GraphVersions

/// Building Graph URLs: `{base}/{version}/{path}?{query}`, every query value percent-encoded.
enum GraphURL {
    /// Whether `version` looks like `v25.0` (``GraphVersion``'s strict reading).
    static func isVersion(_ version: String) -> Bool {
        GraphVersion(version) != nil
    }

    /// The path's segments when it is a plain Graph path (`me`, `me/permissions`, `123_456/picture`): letters,
    /// digits and `_ - . : @ ,` in non-empty segments that are not `.` or `..`. A leading `/` is ignored.
    static func segments(of path: String) -> [Substring]? {
        var trimmed = Substring(path)
        if trimmed.first == "/" {
            trimmed = trimmed.dropFirst()
        }
        let segments = trimmed.split(separator: "/", omittingEmptySubsequences: false)
        guard !segments.isEmpty, segments.count <= 16 else {
            return nil
        }
        for segment in segments {
            guard !segment.isEmpty, segment != ".", segment != "..", segment.utf8.count <= 256,
                segment.utf8.allSatisfy(isPathByte)
            else {
                return nil
            }
        }
        return segments
    }

    /// `base/version/path?name=value&...`, names and values percent-encoded (RFC 3986 unreserved kept).
    static func make(base: String, version: String, segments: [Substring], query: [(String, String)]) -> String {
        var url = base
        while url.hasSuffix("/") {
            url.removeLast()
        }
        url += "/" + version + "/" + segments.joined(separator: "/")
        if !query.isEmpty {
            url += "?" + query.map { percentEncoded($0.0) + "=" + percentEncoded($0.1) }.joined(separator: "&")
        }
        return url
    }

    /// `text` with every byte outside `A-Z a-z 0-9 - . _ ~` written as `%XX`.
    static func percentEncoded(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isUnreserved(byte) {
                output.append(byte)
            } else {
                output += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0f)]]
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The scheme and host of an absolute http(s) URL, lowercased; `nil` when it is not one.
    static func schemeAndHost(of url: String) -> (scheme: String, host: String)? {
        guard let separator = url.range(of: "://") else {
            return nil
        }
        let scheme = url[..<separator.lowerBound].lowercased()
        guard scheme == "https" || scheme == "http" else {
            return nil
        }
        var authority = url[separator.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.contains("@") else {
            return nil
        }
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                return nil
            }
            authority = authority[authority.index(after: authority.startIndex)..<close]
        } else if let colon = authority.lastIndex(of: ":") {
            authority = authority[..<colon]
        }
        guard !authority.isEmpty else {
            return nil
        }
        return (scheme, authority.lowercased())
    }

    /// Whether `url` is `http://` on 127.0.0.0/8, `::1` or `localhost`.
    static func isLoopbackHTTP(_ url: String) -> Bool {
        guard let (scheme, host) = schemeAndHost(of: url), scheme == "http" else {
            return false
        }
        return isLoopback(host)
    }

    /// Whether `host` is 127.0.0.0/8, `::1` or `localhost`.
    static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" || host == "::1" {
            return true
        }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            true
        default:
            false
        }
    }

    private static func isPathByte(_ byte: UInt8) -> Bool {
        isUnreserved(byte) || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "@") || byte == UInt8(ascii: ",")
    }
}
