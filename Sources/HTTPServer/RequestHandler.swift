/// What the server calls for every request. The API layer implements it; tests implement small ones.
///
/// Thread safety: every method is called on a libmicrohttpd thread and must not block. Work that waits
/// (a database query, an outbound HTTP call) goes in ``Reply/later(_:)``: the server suspends the connection,
/// runs the closure on a Swift task, and resumes the connection when it returns, so no thread is held meanwhile.
public protocol RequestHandler: Sendable {
    /// Called once the head has arrived, before any body is read. Return ``HeadDecision/proceed(route:respond:)``
    /// with the function that answers the complete request (a closure over what was matched, so that a route is
    /// matched once per request), or ``HeadDecision/reject(_:route:)`` to answer at once (unknown route, wrong
    /// method, wrong content type) without reading the body.
    func inspect(_ head: RequestHead) -> HeadDecision

    /// Called after each exchange ends (response sent, or connection lost), for logs and metrics. Must be quick.
    func completed(_ record: ExchangeRecord)
}

/// Answers one complete request (``HeadDecision/proceed(route:respond:)``). Return ``Reply/now(_:)`` when the
/// answer needs no waiting.
public typealias Responder = @Sendable (Request) -> Reply

/// The answer to ``RequestHandler/inspect(_:)``.
public enum HeadDecision: Sendable {
    /// Read the body, then call `respond` with the complete request; `route` names the matched route template for
    /// logs and metrics (nil when unmatched).
    case proceed(route: String?, respond: Responder)
    /// Answer with this response now; the body is not read.
    case reject(Response, route: String?)
}

/// The answer to a ``Responder``.
public enum Reply: Sendable {
    /// The response, ready now.
    case now(Response)
    /// Work that waits; the connection is suspended until it returns.
    case later(@Sendable () async -> Response)
    /// Parks the connection with no task: the server suspends it and calls the closure with a ``Wake``. Whoever
    /// calls that wake (once, from any thread) hands back the rest of the work, which the server then runs on its
    /// own thread for this connection. For a wait that needs no task, such as an exact cache's fence: no task,
    /// no continuation, no hop to another thread. The handler timeout applies while parked.
    case parked(@Sendable (Wake) -> Void)
}

extension Reply {
    /// The same reply with `transform` applied to its response, whenever that is made.
    public func map(_ transform: @escaping @Sendable (Response) -> Response) -> Reply {
        switch self {
        case .now(let response):
            return .now(transform(response))
        case .later(let work):
            return .later { transform(await work()) }
        case .parked(let park):
            return .parked { wake in park(Wake { next in wake { next().map(transform) } }) }
        }
    }

    /// Carries the reply out on the caller's task, as the server would on its threads, and returns its response
    /// (route tests drive handlers without a socket with it).
    public func response() async -> Response {
        switch self {
        case .now(let response):
            return response
        case .later(let work):
            return await work()
        case .parked(let park):
            let next = await withCheckedContinuation { continuation in
                park(Wake { continuation.resume(returning: $0) })
            }
            return await next().response()
        }
    }
}

/// Resumes a parked connection (``Reply/parked(_:)``).
public struct Wake: Sendable {
    let deliver: @Sendable (@escaping @Sendable () -> Reply) -> Void

    /// A wake that hands `next` to `deliver` (the server makes its own; tests and wrappers make these).
    public init(_ deliver: @escaping @Sendable (@escaping @Sendable () -> Reply) -> Void) {
        self.deliver = deliver
    }

    /// Resumes the connection; `next` runs on the server's thread for it, and must not block. A wake after the
    /// request timed out or the server stopped does nothing.
    public func callAsFunction(_ next: @escaping @Sendable () -> Reply) {
        deliver(next)
    }
}

/// What happened to one request, for logs and metrics.
public struct ExchangeRecord: Sendable {
    /// How the exchange ended.
    public enum Outcome: String, Sendable {
        /// The response was sent.
        case completed
        /// The client went away or the connection failed before the response was sent.
        case aborted
        /// The connection timed out.
        case timedOut = "timed_out"
        /// The server shut down first.
        case shutdown
    }

    /// The request id sent back in `X-Request-Id`.
    public let requestID: String
    /// The method.
    public let method: String
    /// The matched route template, or nil when no route matched.
    public let route: String?
    /// The status code queued, or nil when none was.
    public let status: Int?
    /// Seconds from the head's arrival to the end.
    public let duration: Double
    /// How it ended.
    public let outcome: Outcome

    /// Creates a record; the server makes these, and tests may too.
    public init(requestID: String, method: String, route: String?, status: Int?, duration: Double, outcome: Outcome) {
        self.requestID = requestID
        self.method = method
        self.route = route
        self.status = status
        self.duration = duration
        self.outcome = outcome
    }
}
