import FBSessionsCore
import FBSessionsStorage
import HTTPServer
import Support

/// The service as ``ServiceHost/start(_:)`` left it running: the HTTP server, the event listener, the webhook
/// dispatcher, the sweep, and the clients they use.
///
/// Ownership: owns all of them; ``stop(reason:)`` ends them in order and closes the pool.
/// Thread safety: ``stop(reason:)`` is called once, from one task.
final class RunningService: Sendable {
    /// The runtime: settings, pool, logger.
    let runtime: Runtime
    /// The HTTP server (its `port` is the one bound).
    let server: Server
    /// The long-poll readers.
    let eventWaiters: EventWaiters
    /// The `LISTEN` connection that wakes readers and the dispatcher.
    let notifications: EventNotifications
    /// The webhook dispatcher.
    let webhooks: WebhookDispatcher
    /// The sweep loop.
    let sweeping: Task<Void, Never>
    /// Shut down the clients (Graph, webhooks, pictures) last.
    private let closers: [@Sendable () -> Void]

    /// Collects the running parts.
    init(
        runtime: Runtime, server: Server, eventWaiters: EventWaiters, notifications: EventNotifications,
        webhooks: WebhookDispatcher, sweeping: Task<Void, Never>, closers: [@Sendable () -> Void]
    ) {
        self.runtime = runtime
        self.server = server
        self.eventWaiters = eventWaiters
        self.notifications = notifications
        self.webhooks = webhooks
        self.sweeping = sweeping
        self.closers = closers
    }

    /// Stops in order: the sweep, long polls (they answer now instead of holding the drain for up to 30 s), the
    /// listener and the dispatcher; then stops accepting and lets in-flight requests finish for
    /// `FBS_SHUTDOWN_GRACE`; then closes the pool and the clients.
    ///
    /// - Parameter reason: What stopped it (the signal's name), for the log.
    func stop(reason: String) async {
        sweeping.cancel()
        eventWaiters.shutdown()
        notifications.stop()
        await webhooks.stop()
        runtime.logger.info("stopping", ["signal": .string(reason), "in_flight": .int(server.activeRequests)])
        server.shutdown(gracePeriod: runtime.settings.shutdownGrace)
        runtime.shutdown()
        for close in closers {
            close()
        }
        runtime.logger.info("stopped")
    }
}
