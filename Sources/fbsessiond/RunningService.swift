import FBSessionsCore
import FBSessionsService
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
    /// The wired service: its listener, dispatcher and clients.
    let service: ServiceAssembly
    /// The HTTP server (its `port` is the one bound).
    let server: Server
    /// The sweep loop.
    let sweeping: Task<Void, Never>
    /// The Graph version watch's loop (``GraphVersionWatch/run(warningInterval:refreshInterval:)``).
    let watching: Task<Void, Never>

    /// Collects the running parts.
    init(
        runtime: Runtime, service: ServiceAssembly, server: Server, sweeping: Task<Void, Never>,
        watching: Task<Void, Never>
    ) {
        self.runtime = runtime
        self.service = service
        self.server = server
        self.sweeping = sweeping
        self.watching = watching
    }

    /// Stops in order: the sweep, long polls (they answer now instead of holding the drain for up to 30 s), the
    /// listener and the dispatcher; then stops accepting and lets in-flight requests finish for
    /// `FBS_SHUTDOWN_GRACE`; then closes the pool and the clients.
    ///
    /// - Parameter reason: What stopped it (the signal's name), for the log.
    func stop(reason: String) async {
        sweeping.cancel()
        watching.cancel()
        service.eventWaiters.shutdown()
        service.notifications.stop()
        await service.webhooks.stop()
        runtime.logger.info("stopping", ["signal": .string(reason), "in_flight": .int(server.activeRequests)])
        server.shutdown(gracePeriod: runtime.settings.shutdownGrace)
        runtime.shutdown()
        service.shutdown()
        runtime.logger.info("stopped")
    }
}
