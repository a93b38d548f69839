import Foundation
import Support

extension WebhookDispatcher {
    /// The undelivered deliveries of active webhooks, as this instance's last pass read them: what the alert
    /// `FBSWebhookBacklog` watches (docs/operations.md). Every instance reads the same table, so every instance
    /// reports the same backlog; it does not count events no pass has enqueued yet.
    public struct Backlog: Sendable, Equatable {
        /// Deliveries not yet delivered (failed ones wait for their retry).
        public var pending: Int
        /// Seconds since the oldest of them was enqueued; 0 when there is none.
        public var oldestSeconds: Double

        /// A backlog.
        public init(pending: Int, oldestSeconds: Double) {
            self.pending = pending
            self.oldestSeconds = oldestSeconds
        }
    }

    /// What the last pass read, and when: between passes (and while passes fail) the oldest delivery's age goes on
    /// growing from that reading, so a dispatcher that stopped cannot hide its backlog.
    struct BacklogReading: Sendable {
        var pending = 0
        var oldestSeconds = 0.0
        var readAt = ContinuousClock.now
    }

    /// The backlog now: the last pass's count, and its oldest delivery's age carried forward to now.
    public var backlog: Backlog { Self.backlog(from: lastBacklog.withLock { $0 }) }

    static func backlog(from reading: BacklogReading) -> Backlog {
        guard reading.pending > 0 else { return Backlog(pending: 0, oldestSeconds: 0) }
        let since = ContinuousClock.now - reading.readAt
        return Backlog(pending: reading.pending, oldestSeconds: reading.oldestSeconds + seconds(since))
    }

    /// Registers `fbs_webhook_deliveries_pending` and `fbs_webhook_oldest_pending_seconds` (gauges of ``backlog``)
    /// and `fbs_webhook_deliveries_total{outcome}` (`delivered`, `failed`: attempts answered 2xx, and the others).
    static func registerMetrics(
        in metrics: MetricsRegistry, backlog: @escaping @Sendable () -> Backlog
    ) -> (delivered: CounterSeries, failed: CounterSeries) {
        metrics.gauge("fbs_webhook_deliveries_pending", help: "Webhook deliveries not yet delivered.") {
            [([], Double(backlog().pending))]
        }
        metrics.gauge(
            "fbs_webhook_oldest_pending_seconds",
            help: "Age of the oldest webhook delivery not yet delivered (0: none)."
        ) {
            [([], backlog().oldestSeconds)]
        }
        let attempts = metrics.counter(
            "fbs_webhook_deliveries_total", help: "Webhook delivery attempts by outcome (delivered: a 2xx answer).")
        return (attempts.series([("outcome", "delivered")]), attempts.series([("outcome", "failed")]))
    }
}
