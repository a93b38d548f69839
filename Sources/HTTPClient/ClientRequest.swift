/// One HTTP request for `Client.execute`.
public struct ClientRequest: Sendable {
    /// The method, for example `GET`, `POST`, `PUT`, `PATCH`, `DELETE` or `HEAD`.
    public var method: String
    /// The absolute URL, including any query string.
    public var url: String
    /// Request headers in order. libcurl adds `Host`, `Content-Length` and `User-Agent` itself.
    public var headers: [(String, String)]
    /// The request body; `nil` sends none. libcurl copies it (`CURLOPT_COPYPOSTFIELDS`).
    public var body: [UInt8]?
    /// Overrides `Client.Configuration.timeout` for this request.
    public var timeout: Duration?
    /// Overrides `Client.Configuration.maxResponseBytes` for this request.
    public var maxResponseBytes: Int?
    /// Opens a new connection for this request and closes it afterwards, never reusing a pooled one. For calls
    /// that must not be sent twice: libcurl silently re-sends a request once when a reused keep-alive connection
    /// turns out to be dead, and libcurl 7.88 cannot turn that off (`CURLOPT_FORBID_RETRY_ON_REUSE` is 8.16+).
    public var freshConnection = false
    /// Addresses to connect to instead of resolving the URL's host (`CURLOPT_RESOLVE`): each entry is
    /// `host:port:address[,address...]`, IPv6 addresses in brackets. For callers that checked the addresses
    /// themselves (``HostResolver``) and must not let a second lookup answer differently.
    public var pinnedAddresses: [String] = []

    /// Creates a request.
    /// - Parameters:
    ///   - method: the HTTP method; `GET` by default.
    ///   - url: the absolute URL.
    ///   - headers: request headers, in order.
    ///   - body: the body bytes, or `nil`.
    ///   - timeout: a total-time limit for this request instead of the client's.
    ///   - maxResponseBytes: a response size limit for this request instead of the client's.
    public init(
        method: String = "GET",
        url: String,
        headers: [(String, String)] = [],
        body: [UInt8]? = nil,
        timeout: Duration? = nil,
        maxResponseBytes: Int? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.maxResponseBytes = maxResponseBytes
    }
}
