import FBSessionsCore
import Foundation
import Postgres
import Support
import Tracing

/// Delivers feed events to webhooks: at least once, one event per signed POST, retried with backoff.
///
/// Each pass does two things. It *enqueues*: for every active webhook (rows locked `FOR UPDATE SKIP LOCKED`,
/// so several instances share the work without doubling it) it reads the app's feed after the webhook's
/// cursor, with the same visibility rule as `GET /v1/events`, inserts one delivery row per event and advances
/// the cursor, in one transaction. Then it *sends*: it claims due deliveries (`FOR UPDATE SKIP LOCKED`, and a
/// lease that moves `next_attempt_at` forward, committed before any request), POSTs them concurrently, and
/// records each outcome: a 2xx answer marks the delivery done; anything else schedules a retry after
/// `initialRetryDelay · 2^(attempts-1)`, capped at `maxRetryDelay`, with jitter. A sender that dies mid-request
/// leaves its claims to be retried when the lease ends, so a receiver may see an event twice (deduplicate by
/// `X-FBS-Event-Id`), never zero times. Deliveries are retried until they succeed or the webhook is removed.
///
/// Passes run when ``wake()`` is called (the listener's notifications), when a retry falls due, and at least
/// every `pollInterval`.
///
/// Ownership: owns the loop task between ``start()`` and ``stop()``; does not own the pool or the transport.
/// Thread safety: every method may be called from any thread or task.
public final class WebhookDispatcher: Sendable {
    /// The settings.
    public let configuration: Configuration
    let database: Database
    let keyring: Keyring
    let transport: any WebhookTransport
    let logger: Logger
    /// Makes a `webhook delivery` span per delivery (a trace of its own); nil when tracing is off.
    let tracer: Tracer?
    private let signal = EventWaiters(maxWaiters: 16)
    /// The loop task, between ``start()`` and ``stop()``.
    private let task = Locked<Task<Void, Never>?>(nil)
    /// The backlog the last pass read (``backlog``).
    let lastBacklog: Locked<BacklogReading>
    /// The attempts counted in `/metrics`, when the dispatcher was given a registry.
    private let attempts: (delivered: CounterSeries, failed: CounterSeries)?

    /// Creates a dispatcher; nothing runs until ``start()`` or ``runPass()``.
    ///
    /// - Parameters:
    ///   - database: The pool.
    ///   - keyring: Opens the webhooks' signing secrets.
    ///   - transport: Sends the requests (`ClientWebhookTransport` in `FBSessionsService`).
    ///   - configuration: Batch size, timeouts and backoff.
    ///   - logger: Where failures are logged (never a URL, secret or body).
    ///   - metrics: When given, registers the backlog's gauges and the attempts' counter
    ///     (``registerMetrics(in:backlog:)``).
    ///   - tracer: Traces each delivery and sends its `traceparent`; nil when tracing is off.
    public init(
        database: Database, keyring: Keyring, transport: any WebhookTransport,
        configuration: Configuration = Configuration(), logger: Logger, metrics: MetricsRegistry? = nil,
        tracer: Tracer? = nil
    ) {
        self.tracer = tracer
        self.database = database
        self.keyring = keyring
        self.transport = transport
        self.configuration = configuration
        self.logger = logger
        let lastBacklog = Locked(BacklogReading())
        self.lastBacklog = lastBacklog
        attempts = metrics.map { registry in
            Self.registerMetrics(in: registry) {
                Self.backlog(from: lastBacklog.withLock { $0 })
            }
        }
    }

    /// Starts the background loop. Calling it again while it runs does nothing.
    public func start() {
        task.withLock { task in
            if task == nil {
                task = Task { [self] in await loop() }
            }
        }
    }

    /// Asks for a pass soon, for example because events were written. Cheap; callable from any thread.
    public func wake() {
        signal.notify(appID: "")
    }

    /// Stops the loop and waits for it to end. Requests in flight are cancelled; their deliveries are retried
    /// after the lease, by this or another instance. Calling it again does nothing.
    public func stop() async {
        guard let running = task.withLock({ $0.take() }) else { return }
        running.cancel()
        await running.value
    }

    /// What one pass did.
    public struct PassResult: Sendable, Equatable {
        /// Delivery rows created.
        public var enqueued = 0
        /// Requests answered with a 2xx.
        public var delivered = 0
        /// Requests that failed and were scheduled again.
        public var failed = 0
        /// Whether the pass hit a batch limit, so more work may be waiting.
        public var moreWaiting = false
        /// The time until the earliest pending retry, if any.
        public var nextDue: Duration?
    }

    /// Runs one pass now: enqueue new events, send due deliveries.
    ///
    /// - Returns: What it did.
    /// - Throws: ``ServiceError/databaseUnavailable`` or `PostgresError` when the database fails.
    @discardableResult
    public func runPass() async throws -> PassResult {
        var result = PassResult()
        let (enqueued, moreEvents) = try await enqueue()
        result.enqueued = enqueued
        let claims = try await claim()
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for claim in claims {
                group.addTask { [self] in await deliver(claim) }
            }
            var outcomes: [Bool] = []
            for await outcome in group {
                outcomes.append(outcome)
            }
            return outcomes
        }
        result.delivered = outcomes.filter { $0 }.count
        result.failed = outcomes.count - result.delivered
        attempts?.delivered.increment(by: Double(result.delivered))
        attempts?.failed.increment(by: Double(result.failed))
        result.moreWaiting = moreEvents || claims.count == configuration.batchSize
        result.nextDue = try await nextDue()
        return result
    }

    private func loop() async {
        while !Task.isCancelled {
            let generation = signal.generation(appID: "")
            var pause = configuration.pollInterval
            do {
                let result = try await runPass()
                if result.moreWaiting {
                    pause = .zero
                } else if let due = result.nextDue {
                    pause = max(.milliseconds(10), min(pause, due))
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning("webhook pass failed", ["error": .string(String(describing: error))])
            }
            if pause > .zero {
                do {
                    _ = try await signal.wait(appID: "", after: generation, timeout: pause)
                } catch {
                    if Task.isCancelled { return }
                }
            }
        }
    }
}
