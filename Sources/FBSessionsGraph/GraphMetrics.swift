import Support

/// The client's metrics: calls by endpoint and outcome, retries, and call time (retries included).
final class GraphMetrics: Sendable {
    private let calls: Counter
    private let retries: Counter
    private let seconds: Histogram

    /// Registers the three families in `registry`.
    init(registry: MetricsRegistry) {
        calls = registry.counter("fbs_graph_calls_total", help: "Graph calls by endpoint and outcome.")
        retries = registry.counter("fbs_graph_retries_total", help: "Graph call attempts after the first.")
        seconds = registry.histogram(
            "fbs_graph_call_seconds", help: "Graph call time, retries included.",
            buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
        )
    }

    /// Records one finished call.
    func record(_ endpoint: String, outcome: String, attempts: Int, seconds elapsed: Double) {
        calls.increment([("endpoint", endpoint), ("outcome", outcome)])
        if attempts > 1 {
            retries.increment([("endpoint", endpoint)], by: Double(attempts - 1))
        }
        seconds.observe(elapsed, [("endpoint", endpoint)])
    }
}
