import FBSessionsCore
import Postgres
import Support

/// Turns the `fbs_events` notifications (sent by ``EventWriter`` when events commit) into wake-ups: for the
/// app's long-poll readers and for the webhook dispatcher; and, with an ``ExactCache``, carries the cache's
/// announcements (`fbs_changes`, migration 0008) and fences on the same connection.
///
/// A lost listener connection wakes every reader and the dispatcher once it is back, since notifications sent
/// meanwhile were lost; readers then simply read again.
///
/// Ownership: owns its ``PostgresListener`` (a connection and a thread); `stop()` ends them.
/// Thread safety: `start()` and `stop()` may be called from any thread.
public final class EventNotifications: Sendable {
    /// The channel events are announced on; the payload is the app id.
    public static let channel = "fbs_events"

    private let listener: PostgresListener
    private let cache: ExactCache?

    /// Creates the listener; nothing connects until ``start()``.
    ///
    /// - Parameters:
    ///   - connectionString: The database's libpq URI or `key=value` string.
    ///   - waiters: The long-poll readers to wake.
    ///   - dispatcher: The webhook dispatcher to wake, if any.
    ///   - cache: The exact cache whose invalidations and fences this listener carries, if any.
    ///   - logger: Where connection losses and recoveries are logged.
    ///   - configure: Adjusts the listener's settings (tests shorten its delays).
    public init(
        connectionString: String, waiters: EventWaiters, dispatcher: WebhookDispatcher? = nil,
        cache: ExactCache? = nil, logger: Logger, configure: (inout PostgresListener.Configuration) -> Void = { _ in }
    ) {
        var configuration = PostgresListener.Configuration(connectionString: connectionString, channels: [Self.channel])
        if let cache {
            configuration.channels.append(ExactCache.changeChannel)
            configuration.fenceChannel = cache.fenceChannel
        }
        configure(&configuration)
        self.cache = cache
        listener = PostgresListener(configuration: configuration) { signal in
            cache?.handle(signal)
            switch signal {
            case .notification(let channel, _) where channel != Self.channel:
                return
            case .notification(_, let appID):
                waiters.notify(appID: appID)
                dispatcher?.wake()
            case .reconnected:
                logger.info("event listener reconnected; waking every reader")
                waiters.notifyAll()
                dispatcher?.wake()
            case .disconnected:
                logger.warning("event listener lost its database connection; reconnecting")
            case .fence:
                return
            }
        }
        if let cache {
            let listener = self.listener
            cache.attach { listener.sendFence($0) }
        }
    }

    /// How the cache's fences go on the listener's current connection; nil while it is not listening, or without
    /// a cache.
    public var fenceMethod: PostgresListener.FenceMethod? {
        listener.fenceMethod
    }

    /// Connects and listens in the background.
    public func start() {
        listener.start()
    }

    /// Stops listening and closes the connection. Idempotent.
    public func stop() {
        listener.stop()
        cache?.detach()
    }

    /// True while the listener's connection is up.
    public var isListening: Bool {
        listener.isListening
    }
}
