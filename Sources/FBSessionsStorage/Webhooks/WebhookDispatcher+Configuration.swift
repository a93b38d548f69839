extension WebhookDispatcher {
    /// How a dispatcher batches, sends and retries. Every setting has a documented default.
    public struct Configuration: Sendable {
        /// Deliveries claimed (and sent concurrently) per pass, and events enqueued per webhook per pass.
        /// Default 32.
        public var batchSize: Int
        /// The time one request may take. Default 10 seconds.
        public var requestTimeout: Duration
        /// How long a claimed delivery is reserved for its sender; after that another pass may retry it. At
        /// least twice `requestTimeout`, so a slow answer is not sent twice. Default 60 seconds.
        public var lease: Duration
        /// The pause before the first retry; it doubles with each failed attempt. Default 5 seconds.
        public var initialRetryDelay: Duration
        /// The longest pause between attempts. Default 1 hour.
        public var maxRetryDelay: Duration
        /// The longest time between passes when nothing wakes the dispatcher. Default 5 seconds.
        public var pollInterval: Duration

        /// Creates a configuration.
        ///
        /// - Parameters:
        ///   - batchSize: Deliveries per pass.
        ///   - requestTimeout: The time per request.
        ///   - lease: The reservation of a claimed delivery.
        ///   - initialRetryDelay: The first retry pause.
        ///   - maxRetryDelay: The cap on retry pauses.
        ///   - pollInterval: The longest pause between passes.
        public init(
            batchSize: Int = 32,
            requestTimeout: Duration = .seconds(10),
            lease: Duration = .seconds(60),
            initialRetryDelay: Duration = .seconds(5),
            maxRetryDelay: Duration = .seconds(3600),
            pollInterval: Duration = .seconds(5)
        ) {
            self.batchSize = max(1, batchSize)
            self.requestTimeout = requestTimeout
            self.lease = max(lease, requestTimeout * 2)
            self.initialRetryDelay = initialRetryDelay
            self.maxRetryDelay = max(maxRetryDelay, initialRetryDelay)
            self.pollInterval = pollInterval
        }

        /// The pause after `attempts` failed attempts: `initialRetryDelay · 2^(attempts-1)`, capped at
        /// `maxRetryDelay`, then scaled by a random factor in [0.5, 1] so that receivers coming back from an
        /// outage are not hit by every sender at once.
        ///
        /// - Parameters:
        ///   - attempts: Attempts made so far, at least 1.
        ///   - jitter: A number in [0, 1]; random by default.
        /// - Returns: The pause.
        public func retryDelay(afterAttempts attempts: Int, jitter: Double = Double.random(in: 0...1)) -> Duration {
            let exponent = min(max(attempts, 1) - 1, 40)
            let base = WebhookDispatcher.seconds(initialRetryDelay) * Double(UInt64(1) << UInt64(exponent))
            let capped = min(base, WebhookDispatcher.seconds(maxRetryDelay))
            return .milliseconds(Int((capped * (0.5 + 0.5 * min(max(jitter, 0), 1)) * 1000).rounded()))
        }
    }
}
