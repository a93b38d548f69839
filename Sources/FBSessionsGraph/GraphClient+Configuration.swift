import FBSessionsCore
import Foundation

extension GraphClient {
    /// Settings for a `GraphClient`. Every property has a documented default.
    public struct Configuration: Sendable {
        /// The Graph base URL without a version (`FBS_GRAPH_URL`). Default `https://graph.facebook.com`.
        public var baseURL: String
        /// The version used when `GraphCredentials.version` is `nil` (`FBS_GRAPH_VERSION`).
        /// Default `Settings.defaultGraphVersion`.
        public var defaultVersion: String
        /// Time for one call, retries and backoff included (`FBS_GRAPH_TIMEOUT`, "bounds each call").
        /// Default 10 s.
        public var timeout: Duration
        /// Time for one attempt; `nil` (default) lets an attempt use whatever remains of `timeout`, so a timed-out
        /// attempt is never retried. Set it lower than `timeout` to leave room for retries after slow attempts.
        public var attemptTimeout: Duration?
        /// Largest response body accepted; a larger one is `transient(.responseTooLarge)`. Default 1 MiB.
        public var maxResponseBytes: Int
        /// When and how often transient failures are retried. Default `RetryPolicy()`.
        public var retry: RetryPolicy
        /// Allows a plain `http` base URL on a loopback host (127.0.0.0/8, `::1`, `localhost`), for tests and the
        /// built-in emulator. TLS verification is never turned off. Default `false`.
        public var allowsPlainHTTP: Bool

        /// Creates a configuration; every parameter has the documented default.
        /// - Parameters:
        ///   - baseURL: the Graph base URL, no version.
        ///   - defaultVersion: the default `vMAJOR.MINOR`.
        ///   - timeout: time per call, retries included.
        ///   - attemptTimeout: time per attempt, or `nil`.
        ///   - maxResponseBytes: the response size cap.
        ///   - retry: the retry policy.
        ///   - allowsPlainHTTP: whether an http loopback base URL is accepted.
        public init(
            baseURL: String = "https://graph.facebook.com",
            defaultVersion: String = Settings.defaultGraphVersion,
            timeout: Duration = .seconds(10),
            attemptTimeout: Duration? = nil,
            maxResponseBytes: Int = 1 << 20,
            retry: RetryPolicy = RetryPolicy(),
            allowsPlainHTTP: Bool = false
        ) {
            self.baseURL = baseURL
            self.defaultVersion = defaultVersion
            self.timeout = timeout
            self.attemptTimeout = attemptTimeout
            self.maxResponseBytes = maxResponseBytes
            self.retry = retry
            self.allowsPlainHTTP = allowsPlainHTTP
        }

        /// The configuration the service's settings describe: `FBS_GRAPH_URL`, `FBS_GRAPH_VERSION` and
        /// `FBS_GRAPH_TIMEOUT`. Plain http is allowed only when `FBS_GRAPH_URL` itself is an http URL on a
        /// loopback host (the operator pointed the service at a local emulator).
        /// - Parameter settings: the parsed settings.
        public init(settings: Settings) {
            self.init(
                baseURL: settings.graphURL,
                defaultVersion: settings.graphVersion,
                timeout: .milliseconds(Int((settings.graphTimeout * 1000).rounded())),
                allowsPlainHTTP: GraphURL.isLoopbackHTTP(settings.graphURL)
            )
        }
    }

    /// Bounded retries with jittered exponential backoff, for `GraphError.transient` only.
    ///
    /// The delay before retry `n` (n = 1 after the first attempt) is `min(maxDelay, baseDelay × 2^(n-1))`, of
    /// which a random fraction up to `jitter` is taken off ("equal jitter" for 0.5, "full jitter" for 1).
    /// Invalid tokens, missing permissions, rate limits and other errors are never retried. Single-use calls
    /// (the code exchange, the revocation) are retried only after `connectFailed`: the request never left.
    /// No retry starts when what remains of the call's `timeout` after the delay is under 50 ms.
    public struct RetryPolicy: Sendable {
        /// Most attempts per call, the first included; 1 disables retries. Default 3.
        public var maxAttempts: Int
        /// The first backoff delay. Default 100 ms.
        public var baseDelay: Duration
        /// The longest backoff delay. Default 2 s.
        public var maxDelay: Duration
        /// The largest random fraction taken off each delay, 0...1. Default 0.5.
        public var jitter: Double

        /// No retries.
        public static let none = RetryPolicy(maxAttempts: 1)

        /// Creates a policy; every parameter has the documented default.
        /// - Parameters:
        ///   - maxAttempts: attempts per call, at least 1.
        ///   - baseDelay: the first delay.
        ///   - maxDelay: the delay cap.
        ///   - jitter: the random fraction, 0...1.
        public init(
            maxAttempts: Int = 3,
            baseDelay: Duration = .milliseconds(100),
            maxDelay: Duration = .seconds(2),
            jitter: Double = 0.5
        ) {
            self.maxAttempts = max(1, maxAttempts)
            self.baseDelay = max(.zero, baseDelay)
            self.maxDelay = max(.zero, maxDelay)
            self.jitter = min(1, max(0, jitter))
        }

        /// The delay before the retry that follows attempt `attempt` (1-based).
        /// - Parameters:
        ///   - attempt: the attempt that just failed.
        ///   - random: a number in 0...1 (the jitter draw).
        /// - Returns: the delay.
        public func delay(afterAttempt attempt: Int, random: Double) -> Duration {
            let exponent = Double(min(max(attempt - 1, 0), 30))
            let capped = min(baseDelay.seconds * pow(2, exponent), maxDelay.seconds)
            let seconds = capped * (1 - jitter * min(1, max(0, random)))
            return .nanoseconds(Int64((seconds * 1e9).rounded()))
        }
    }

    /// A configuration the client cannot work with. Thrown by `GraphClient.init`.
    public struct ConfigurationError: Error, CustomStringConvertible, Sendable {
        /// What is wrong, naming the setting.
        public let description: String
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
