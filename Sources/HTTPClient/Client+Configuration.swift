extension Client {
    /// Settings for a `Client`; each request may override `timeout` and `maxResponseBytes`.
    public struct Configuration: Sendable {
        /// Total time allowed per request, connection included. Default 10 s.
        public var timeout: Duration
        /// Time allowed to connect (TCP and TLS). Default 5 s.
        public var connectTimeout: Duration
        /// Largest response body accepted; larger ones fail with `.responseTooLarge` as soon as the body (or its
        /// `Content-Length`) passes the limit. Default 10 MiB.
        public var maxResponseBytes: Int
        /// Whether to follow 3xx redirects. Default `false`: the 3xx response is returned.
        public var followRedirects: Bool
        /// Most redirects followed per request when `followRedirects` is on. Default 5.
        public var maxRedirects: Int
        /// URL schemes allowed for requests and for redirects (lowercase). Default `["https", "http"]`.
        public var allowedSchemes: Set<String>
        /// The `User-Agent` header; empty sends none. Default `fbsessiond`.
        public var userAgent: String
        /// Most simultaneous connections to one host; 0 (default) means no limit. Extra transfers queue.
        public var maxConnectionsPerHost: Int
        /// Most simultaneous connections in total; 0 (default) means no limit. Extra transfers queue.
        public var maxTotalConnections: Int

        /// Creates a configuration; every parameter has the documented default.
        /// - Parameters:
        ///   - timeout: total time per request.
        ///   - connectTimeout: time to connect.
        ///   - maxResponseBytes: largest accepted body.
        ///   - followRedirects: whether to follow redirects.
        ///   - maxRedirects: redirect limit when following.
        ///   - allowedSchemes: allowed URL schemes.
        ///   - userAgent: the `User-Agent` value.
        ///   - maxConnectionsPerHost: per-host connection limit, 0 for none.
        ///   - maxTotalConnections: total connection limit, 0 for none.
        public init(
            timeout: Duration = .seconds(10),
            connectTimeout: Duration = .seconds(5),
            maxResponseBytes: Int = 10 * 1024 * 1024,
            followRedirects: Bool = false,
            maxRedirects: Int = 5,
            allowedSchemes: Set<String> = ["https", "http"],
            userAgent: String = "fbsessiond",
            maxConnectionsPerHost: Int = 0,
            maxTotalConnections: Int = 0
        ) {
            self.timeout = timeout
            self.connectTimeout = connectTimeout
            self.maxResponseBytes = maxResponseBytes
            self.followRedirects = followRedirects
            self.maxRedirects = maxRedirects
            self.allowedSchemes = allowedSchemes
            self.userAgent = userAgent
            self.maxConnectionsPerHost = maxConnectionsPerHost
            self.maxTotalConnections = maxTotalConnections
        }
    }
}

extension Duration {
    /// Whole milliseconds, rounded up, at least 1 (libcurl reads 0 as "no timeout").
    var curlMilliseconds: Int {
        let (seconds, attoseconds) = components
        let wholeSeconds = min(max(seconds, 0), Int64(Int32.max) / 1000)
        let milliseconds = wholeSeconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int(max(1, milliseconds))
    }
}
