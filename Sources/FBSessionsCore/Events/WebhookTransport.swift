/// Sends one webhook request. Implemented over `HTTPClient` in `FBSessionsService` (`ClientWebhookTransport`).
public protocol WebhookTransport: Sendable {
    /// POSTs `body` to `url` and returns the answer's status code, whatever it is.
    ///
    /// - Parameters:
    ///   - url: The webhook's URL.
    ///   - headers: The request headers, in order.
    ///   - body: The body bytes.
    ///   - timeout: The most time the request may take.
    /// - Returns: The HTTP status code.
    /// - Throws: ``WebhookTransportError`` when no answer came.
    func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) async throws -> Int
}

/// No answer came to a webhook request.
public struct WebhookTransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What happened, short and safe to store and log: `timeout`, `connectFailed`, ... Never a URL, header or
    /// body.
    public let problem: String
    /// True when the request was abandoned because the sender is stopping (task cancelled, client shut down):
    /// not the receiver's fault, so no attempt is recorded and the lease brings the delivery back.
    public let isCancellation: Bool

    /// Creates the error.
    public init(problem: String, isCancellation: Bool = false) {
        self.problem = problem
        self.isCancellation = isCancellation
    }

    /// The problem.
    public var description: String {
        problem
    }
}
