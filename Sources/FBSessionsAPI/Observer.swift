import HTTPServer
import Support

/// Logs one JSON line per request and keeps the request metrics.
///
/// The log line carries time, request id, method, route template, status, duration and outcome; never the query
/// string, the body, or a header value, so no token can reach the log.
public struct Observer: Sendable {
    /// The registry `/metrics` renders.
    public let metrics: MetricsRegistry
    private let logger: Logger
    private let requests: Counter
    private let latency: Histogram

    /// Creates an observer that registers its metrics in `metrics`.
    public init(metrics: MetricsRegistry, logger: Logger) {
        self.metrics = metrics
        self.logger = logger
        self.requests = metrics.counter("fbs_http_requests_total", help: "HTTP requests by route, method and status.")
        self.latency = metrics.histogram(
            "fbs_http_request_duration_seconds", help: "HTTP request latency by route.",
            buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10])
    }

    /// Records one finished exchange.
    public func record(_ record: ExchangeRecord) {
        let route = record.route ?? "unmatched"
        let status = record.status.map(String.init) ?? "none"
        requests.increment([("route", route), ("method", record.method), ("status", status)])
        latency.observe(record.duration, [("route", route)])
        let level: Logger.Level = (record.status ?? 500) >= 500 ? .warning : .info
        logger.log(
            level, "request",
            [
                "request_id": .string(record.requestID), "method": .string(record.method), "route": .string(route),
                "status": record.status.map { .int($0) } ?? .string("none"),
                "duration_ms": .double((record.duration * 1e5).rounded() / 100), "outcome": .string(record.outcome.rawValue),
            ])
    }
}
