import FBSessionsCore
import Foundation
import HTTPServer
import Support

/// Logs one JSON line per request and keeps the request metrics.
///
/// The log line carries time, request id, method, route template, status, duration and outcome; never the query
/// string, the body, or a header value, so no token can reach the log.
///
/// Cost per request: one lookup of the (route, method, status) series pair in a small cache, one increment and
/// one observation; the log line's metadata is built only when the line will be written (docs/performance.md,
/// "Figures behind the code").
public struct Observer: Sendable {
    /// The registry `/metrics` renders.
    public let metrics: MetricsRegistry
    private let logger: Logger
    private let requests: Counter
    private let latency: Histogram
    private let databaseUnavailable: CounterSeries
    private let series = SeriesCache()
    /// The ids of traced requests' spans, for their request lines; nil when tracing is off (``Router`` sets it).
    var traceLog: RequestTraceLog?

    /// Creates an observer that registers its metrics in `metrics`.
    public init(metrics: MetricsRegistry, logger: Logger) {
        self.metrics = metrics
        self.logger = logger
        self.requests = metrics.counter("fbs_http_requests_total", help: "HTTP requests by route, method and status.")
        self.latency = metrics.histogram(
            "fbs_http_request_duration_seconds", help: "HTTP request latency by route.",
            buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10])
        // A 503 alone does not say why (Graph, a shutdown, overload and readiness answer 503 too); this counts the
        // answers that name the database, for the alert `FBSDatabaseUnavailable` (docs/operations.md).
        self.databaseUnavailable = metrics.counter(
            "fbs_http_database_unavailable_total", help: "Requests answered 503 database_unavailable."
        ).series()
    }

    /// Counts one request answered 503 `database_unavailable`.
    public func countDatabaseUnavailable() {
        databaseUnavailable.increment()
    }

    /// Records one finished exchange.
    public func record(_ record: ExchangeRecord) {
        let route = record.route ?? "unmatched"
        let handles = series.handles(route: route, method: record.method, status: record.status) {
            let status = record.status.map(String.init) ?? "none"
            return (
                requests.series([("route", route), ("method", record.method), ("status", status)]),
                latency.series([("route", route)])
            )
        }
        handles.requests.increment()
        handles.latency.observe(record.duration)
        let level: Logger.Level = (record.status ?? 500) >= 500 ? .warning : .info
        let trace = traceLog?.take(record.requestID)
        guard level >= logger.level else { return }
        logger.log(level, "request", fields: RequestLogFields(record: record, route: route, trace: trace))
    }

    /// Logs, at error level, an error no mapping knew (the client got 500 `internal_error` with this request id).
    /// Only the error's type is written, plus the text of types whose description is known to hold no secret
    /// (`PostgresError`'s is its code and SQLSTATE): a libcurl or decoding error's text may quote a URL or a value.
    public func unexpected(_ error: any Error, requestID: String, route: String) {
        var metadata: [String: Logger.Value] = [
            "request_id": .string(requestID), "route": .string(route), "error_type": .string(String(reflecting: type(of: error))),
        ]
        if let safe = error as? any SafelyDescribedError {
            metadata["error"] = .string(safe.safeDescription)
        }
        // Written after the request's span ended, outside its task: the ids come from the span's entry.
        if let ids = traceLog?.peek(requestID) {
            metadata["trace_id"] = .string(ids.traceID)
            metadata["span_id"] = .string(ids.spanID)
        }
        logger.log(.error, "unexpected error", metadata)
    }
}

/// The metric series of each (route, method, status) seen, resolved once. Bounded: routes are templates, methods
/// and statuses few; an unexpected flood of distinct methods empties it rather than growing it.
private final class SeriesCache: Sendable {
    struct Key: Hashable {
        let route: String
        let method: String
        let status: Int
    }

    private let entries = Locked<[Key: (requests: CounterSeries, latency: HistogramSeries)]>([:])

    func handles(
        route: String, method: String, status: Int?,
        make: () -> (CounterSeries, HistogramSeries)
    ) -> (requests: CounterSeries, latency: HistogramSeries) {
        let key = Key(route: route, method: method, status: status ?? -1)
        if let found = entries.withLock({ $0[key] }) { return found }
        let made = make()
        entries.withLock { entries in
            if entries.count >= 4096 { entries.removeAll() }
            entries[key] = made
        }
        return made
    }
}

/// The request log line's fields, written straight into the line's bytes in sorted key order (`duration_ms`,
/// `method`, `outcome`, `request_id`, `route`, `span_id`, `status`, `trace_id`; the two ids only for a traced
/// request) with no dictionary. ``metadata`` is the same line as a
/// dictionary, for loggers that keep records; a test checks that both give the same line.
struct RequestLogFields: LogFields {
    let record: ExchangeRecord
    /// The route template, or `unmatched`.
    let route: String
    /// The request's trace and span ids when it was traced.
    var trace: (traceID: String, spanID: String)? = nil

    var durationMilliseconds: Double { (record.duration * 1e5).rounded() / 100 }

    var metadata: [String: Logger.Value] {
        var fields: [String: Logger.Value] = [
            "request_id": .string(record.requestID), "method": .string(record.method), "route": .string(route),
            "status": record.status.map { .int($0) } ?? .string("none"),
            "duration_ms": .double(durationMilliseconds), "outcome": .string(record.outcome.rawValue),
        ]
        if let trace {
            fields["trace_id"] = .string(trace.traceID)
            fields["span_id"] = .string(trace.spanID)
        }
        return fields
    }

    func appendJSON(to writer: inout LogLineWriter) {
        writer.raw(#","duration_ms":"#)
        writer.double(durationMilliseconds)
        writer.raw(#","method":"#)
        writer.quoted(record.method)
        writer.raw(#","outcome":"#)
        switch record.outcome {
        case .completed: writer.raw(#""completed""#)
        case .aborted: writer.raw(#""aborted""#)
        case .timedOut: writer.raw(#""timed_out""#)
        case .shutdown: writer.raw(#""shutdown""#)
        }
        writer.raw(#","request_id":"#)
        writer.quoted(record.requestID)
        writer.raw(#","route":"#)
        writer.quoted(route)
        if let trace {
            writer.raw(#","span_id":"#)
            writer.quoted(trace.spanID)
        }
        writer.raw(#","status":"#)
        if let status = record.status {
            writer.int(status)
        } else {
            writer.raw(#""none""#)
        }
        if let trace {
            writer.raw(#","trace_id":"#)
            writer.quoted(trace.traceID)
        }
    }
}
