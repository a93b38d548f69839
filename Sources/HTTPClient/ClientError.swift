/// An error from `Client.execute`.
///
/// `description` is generic: it names the code and nothing else, so it is safe to log at any level.
/// `debugDescription` adds the request's scheme, host, port and path (never its query string, fragment or
/// user info, which can carry access tokens) and libcurl's error text. Headers and bodies are never included.
public struct ClientError: Error, CustomStringConvertible, CustomDebugStringConvertible, Sendable {
    /// What went wrong. New codes may be added without breaking source compatibility.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case timeout, connectFailed, responseTooLarge, invalidURL, invalidRequest, disallowedScheme
            case transport, cancelled, shutdown
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// The request (or its connection phase) took longer than its timeout.
        public static let timeout = Code(.timeout)
        /// No connection could be made: refused, unreachable, or the host name did not resolve.
        public static let connectFailed = Code(.connectFailed)
        /// The response body is, or was announced to be, larger than `maxResponseBytes`.
        public static let responseTooLarge = Code(.responseTooLarge)
        /// The URL could not be parsed.
        public static let invalidURL = Code(.invalidURL)
        /// The method or a header is malformed (for example it contains a line break).
        public static let invalidRequest = Code(.invalidRequest)
        /// The URL's scheme (or a redirect's) is not in `allowedSchemes`. No connection was made for it.
        public static let disallowedScheme = Code(.disallowedScheme)
        /// Any other transport failure: TLS, a connection closed early, a malformed response, ...
        public static let transport = Code(.transport)
        /// The calling task was cancelled; the transfer was aborted.
        public static let cancelled = Code(.cancelled)
        /// The client was shut down before the transfer finished.
        public static let shutdown = Code(.shutdown)

        /// The code's name, for example `timeout`.
        public var description: String { base.rawValue }
    }

    /// What went wrong.
    public let code: Code
    /// scheme://host:port/path of the request, without query, fragment or user info; `nil` when unknown.
    let target: String?
    /// libcurl's error text or other detail, already scrubbed of query strings.
    let detail: String?

    init(_ code: Code, target: String? = nil, detail: String? = nil) {
        self.code = code
        self.target = target
        self.detail = detail.map(URLRedaction.scrubQueries(in:))
    }

    /// A generic description naming only the code.
    public var description: String {
        "ClientError.\(code)"
    }

    /// The description plus target (no query string) and libcurl's error text.
    public var debugDescription: String {
        var text = description
        if let target {
            text += " (\(target))"
        }
        if let detail {
            text += ": \(detail)"
        }
        return text
    }
}
