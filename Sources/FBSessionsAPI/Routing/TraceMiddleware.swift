import FBSessionsCore
import Foundation
import HTTPServer
import Support
import Tracing

/// The server span of a request (docs/operations.md, "Traces"): first in the chain, so that a 401 from ``KeyCheck``
/// is traced too. The router decided the request's sampling when its head came (``Router/inspect(_:trace:)``); an
/// unsampled request passes on at the cost of a nil check.
///
/// The span is named `{METHOD} {route template}` and carries `http.request.method`, `http.route`, `url.path`,
/// `fbs.request_id`, `http.response.status_code` and, once ``KeyCheck`` knows the key, `fbs.key_id`; never the query
/// string, a header value or a body. A 5xx answer sets the ERROR status. While the handler runs the span is the
/// task's current span: Graph and database spans hang under it and log lines carry its ids.
struct TraceMiddleware: Middleware {
    let tracer: Tracer
    let log: RequestTraceLog

    func handle(_ context: RouteContext, next: (RouteContext) async throws -> Response) async throws -> Response {
        guard let decision = context.trace,
            let span = tracer.serverSpan(context.request.head.method + " " + context.route.path.description, decision: decision)
        else { return try await next(context) }
        Self.describe(
            span, method: context.request.head.method, route: context.route.path.description,
            path: context.request.head.path, requestID: context.requestID)
        var context = context
        context.span = span
        let traced = context
        defer {
            span.end()
            log.remember(context.requestID, span)
        }
        do {
            let response = try await tracer.withSpan(span) { try await next(traced) }
            Self.finish(span, status: response.status)
            return response
        } catch {
            Self.finish(span, status: Self.status(of: error))
            throw error
        }
    }

    /// The request's attributes: method, route template, path and request id.
    static func describe(_ span: Span, method: String, route: String, path: String, requestID: String) {
        span.set("http.request.method", method)
        span.set("http.route", route)
        // The path as requested, but for a route whose parameter is a secret to its holder (a data deletion's
        // confirmation code): its template then.
        span.set("url.path", route.contains("{confirmation_code}") ? route : path)
        span.set("fbs.request_id", requestID)
    }

    static func finish(_ span: Span, status: Int) {
        span.set("http.response.status_code", status)
        if status >= 500 { span.setError() }
    }

    /// The status the router will answer `error` with (``Router``'s `failure`).
    static func status(of error: any Error) -> Int {
        if let failed = error as? FailureWithHeaders { return status(of: failed.error) }
        if error is CancellationError { return 503 }
        return APIError.from(error).status
    }
}

/// The trace and span ids of requests whose server span ended, until their request log line is written: that line
/// is written by ``Router/completed(_:)`` after the exchange, outside the request's task, so it cannot read the
/// task-local span. Bounded: an entry whose line never comes (an exchange that ends before its handler) is forgotten
/// when the table fills.
final class RequestTraceLog: Sendable {
    private static let limit = 8192
    private let entries = Locked<[String: (traceID: String, spanID: String)]>([:])

    func remember(_ requestID: String, _ span: Span) {
        entries.withLock { entries in
            if entries.count >= Self.limit { entries.removeAll(keepingCapacity: true) }
            entries[requestID] = (span.traceIDHex, span.spanIDHex)
        }
    }

    /// The ids of `requestID`'s span, forgotten.
    func take(_ requestID: String) -> (traceID: String, spanID: String)? {
        entries.withLock { $0.removeValue(forKey: requestID) }
    }

    /// The ids of `requestID`'s span, kept (its request line still comes).
    func peek(_ requestID: String) -> (traceID: String, spanID: String)? {
        entries.withLock { $0[requestID] }
    }
}
