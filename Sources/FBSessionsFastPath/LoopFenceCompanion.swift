import FBSessionsStorage
import HTTPServer
import Postgres

/// An exact cache's fence connection for one event loop of the HTTP server (docs/caching.md, "A fence connection per
/// event loop"): the loop watches its socket beside its clients' and drives it between turns, so that the fast
/// path's requests on that loop wait for a fence on their own thread.
public final class LoopFenceCompanion: EventLoopCompanion {
    private let fence: ExactCache.LoopFence

    /// A companion whose connection goes to `listenerURL` (the listener's address, past any pooler).
    public init(cache: ExactCache, listenerURL: String) {
        fence = cache.makeLoopFence { try Self.connect(listenerURL) }
    }

    /// A loop's fence connection: listening on the change channel, with the listener's limits.
    static func connect(_ url: String) throws -> PostgresFenceConnection {
        try PostgresFenceConnection(
            connectionString: url, channels: [ExactCache.changeChannel],
            options: PostgresConnection.Options(
                connectTimeout: .seconds(5), statementTimeout: .seconds(3), deadlineMargin: .zero,
                applicationName: "fbsessiond-fence", preparedStatements: .never))
    }

    public var watched: (descriptor: Int32, serial: UInt64)? { fence.watched }
    public func readable() { fence.readable() }
    public func afterTurn() -> UInt64? { fence.afterTurn() }
    public func stop() { fence.stop() }
}
