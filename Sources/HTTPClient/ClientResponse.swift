/// A complete HTTP response. Any status, including 4xx and 5xx, is a response, not an error.
public struct ClientResponse: Sendable {
    /// The status code of the final response (after redirects, when they are followed).
    public var status: Int
    /// The final response's headers in the order received; names are lowercased.
    public var headers: [(String, String)]
    /// The body bytes, at most `maxResponseBytes`.
    public var body: [UInt8]
    /// The URL of the final response (differs from the request's after followed redirects). It may contain the
    /// request's query string: treat it as secret.
    public var effectiveURL: String?

    /// Creates a response (useful for fakes in tests).
    /// - Parameters:
    ///   - status: the status code.
    ///   - headers: name/value pairs; names are lowercased here.
    ///   - body: the body bytes.
    ///   - effectiveURL: the final URL, if known.
    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = [], effectiveURL: String? = nil) {
        self.status = status
        self.headers = headers.map { ($0.0.lowercased(), $0.1) }
        self.body = body
        self.effectiveURL = effectiveURL
    }

    /// The value of the first header called `name`, compared case-insensitively.
    /// - Parameter name: the header name.
    /// - Returns: its value, or `nil` when absent.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.0 == wanted }?.1
    }

    /// Every value of the headers called `name`, in order (for example several `set-cookie`).
    /// - Parameter name: the header name, compared case-insensitively.
    /// - Returns: the values, possibly empty.
    public func headers(named name: String) -> [String] {
        let wanted = name.lowercased()
        return headers.filter { $0.0 == wanted }.map(\.1)
    }

    /// The body decoded as UTF-8 (invalid sequences become U+FFFD).
    public var bodyText: String {
        String(decoding: body, as: UTF8.self)
    }
}
