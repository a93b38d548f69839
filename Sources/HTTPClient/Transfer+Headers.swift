extension Transfer {
    /// Renders request headers as libcurl header lines, refusing anything that could smuggle a second header or
    /// request (line breaks, NUL, malformed names). Adds an empty `Expect:` so that libcurl never waits for a
    /// `100 Continue` before sending a body, unless the caller set `Expect` itself.
    static func headerLines(_ headers: [(String, String)], target: String) throws -> [String] {
        var lines: [String] = []
        var hasExpect = false
        for (name, value) in headers {
            guard isToken(name) else {
                throw ClientError(.invalidRequest, target: target, detail: "malformed header name")
            }
            guard !value.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) else {
                throw ClientError(.invalidRequest, target: target, detail: "line break in header value")
            }
            let value = trimmed(Substring(value))
            // libcurl sends "Name;" as a header with an empty value ("Name:" would remove the header).
            lines.append(value.isEmpty ? "\(name);" : "\(name): \(value)")
            hasExpect = hasExpect || name.lowercased() == "expect"
        }
        if !hasExpect {
            lines.append("Expect:")
        }
        return lines
    }

    /// Whether `text` is an RFC 9110 token (a method or a header name).
    static func isToken(_ text: String) -> Bool {
        !text.isEmpty
            && text.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"):
                    return true
                default:
                    return "!#$%&'*+-.^_`|~".utf8.contains(byte)
                }
            }
    }

    /// `text` without leading and trailing spaces and tabs.
    static func trimmed(_ text: Substring) -> String {
        var text = text
        while let first = text.first, first == " " || first == "\t" {
            text.removeFirst()
        }
        while let last = text.last, last == " " || last == "\t" {
            text.removeLast()
        }
        return String(text)
    }
}
