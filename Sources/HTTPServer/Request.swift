/// What the server knows of a request once its head has arrived, before the body.
///
/// A class of constants: the head travels from the exchange to `inspect`, the request and the route context, and
/// as a class each of those is one retain instead of a copy of five fields.
public final class RequestHead: Sendable {
    /// The method as sent, e.g. `GET`.
    public let method: String
    /// The path as sent, still percent-encoded, without the query.
    public let path: String
    /// The raw query string after `?`, still percent-encoded; empty when absent.
    public let rawQuery: String
    /// The header fields.
    public let headers: HTTPHeaders
    /// The request id: the client's `X-Request-Id` when well-formed, else a fresh one.
    public let requestID: String

    /// Creates a request head; the server makes these, and route-level tests may too.
    public init(method: String, path: String, rawQuery: String = "", headers: HTTPHeaders = [:], requestID: String) {
        self.method = method
        self.path = path
        self.rawQuery = rawQuery
        self.headers = headers
        self.requestID = requestID
    }
}

/// A complete request: its head and its body.
public struct Request: Sendable {
    /// The request's head.
    public let head: RequestHead
    /// The body bytes (at most the configured body limit).
    public let body: [UInt8]

    /// Creates a request; the server makes these, and tests may too.
    public init(head: RequestHead, body: [UInt8]) {
        self.head = head
        self.body = body
    }

    /// The method as sent.
    public var method: String { head.method }
    /// The path as sent, percent-encoded.
    public var path: String { head.path }
    /// The header fields.
    public var headers: HTTPHeaders { head.headers }
    /// The request id.
    public var requestID: String { head.requestID }
}
