/// Why a Graph call failed in a way that may succeed later: the payload of `GraphError.transient`.
public struct GraphTransientFailure: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The kind of failure.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// No connection could be made (refused, unreachable, name not resolved). The request never reached Graph.
        case connectFailed = "connect_failed"
        /// The call ran out of time (connecting, waiting, or a server that trickles its answer).
        case timeout
        /// The connection broke before a whole response arrived (closed early, truncated body, TLS failure).
        case connectionLost = "connection_lost"
        /// Graph answered with a transient error: codes 1 and 2, `is_transient: true`, or an error on a 5xx.
        case graphError = "graph_error"
        /// An HTTP 5xx without a Graph error body.
        case serverError = "server_error"
        /// A body that is empty, not JSON, of an unexpected shape or with wrong types (an HTML error page, say).
        case malformedResponse = "malformed_response"
        /// A body larger than the client's limit.
        case responseTooLarge = "response_too_large"
        /// The client was shut down.
        case unavailable
    }

    /// The kind of failure.
    public var kind: Kind
    /// The HTTP status, when a response arrived.
    public var httpStatus: Int?
    /// Graph's error, for `.graphError` (and for a 5xx that carried a Graph error body).
    public var detail: GraphErrorDetail?
    /// How many attempts the client made before giving up (1 when it did not retry).
    public var attempts: Int

    /// Creates a failure.
    /// - Parameters:
    ///   - kind: the kind.
    ///   - httpStatus: the HTTP status, if a response arrived.
    ///   - detail: Graph's error, if any.
    ///   - attempts: attempts made.
    public init(_ kind: Kind, httpStatus: Int? = nil, detail: GraphErrorDetail? = nil, attempts: Int = 1) {
        self.kind = kind
        self.httpStatus = httpStatus
        self.detail = detail
        self.attempts = attempts
    }

    /// Whether the request may have reached Graph (and so may have had an effect). Only `connectFailed` is
    /// certain not to have; the client never repeats a single-use call (a code exchange) once this is `true`.
    public var mayHaveReachedGraph: Bool {
        kind != .connectFailed
    }

    /// For example `timeout after 3 attempts` or `graph_error http=500 (2)`; no message.
    public var description: String {
        var text = kind.rawValue
        if let httpStatus {
            text += " http=\(httpStatus)"
        }
        if let detail {
            text += " (\(detail))"
        }
        if attempts > 1 {
            text += " after \(attempts) attempts"
        }
        return text
    }

    /// The description plus Graph's message, when there is one.
    public var debugDescription: String {
        guard let detail else {
            return description
        }
        return "\(description): \(detail.message)"
    }
}
