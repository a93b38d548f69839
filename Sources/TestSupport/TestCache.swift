import FBSessionsCore
import FBSessionsStorage
import Foundation
import Support

/// The exact cache a test harness runs its service with, as the service would (docs/caching.md): sized by
/// `FBS_CACHE_BYTES` like `fbsessiond serve` (default 32 MiB; `0`: no cache, every read from the database; a few
/// KiB: a cache that evicts all the time), with its own listener on the test database carrying the announcements
/// and fences. `scripts/test` runs the suite with each of the three.
public final class TestCache: Sendable {
    /// Nil when `FBS_CACHE_BYTES` is 0.
    public let cache: ExactCache?
    private let notifications: EventNotifications?

    /// The bytes the suite runs with: `FBS_CACHE_BYTES` from the environment, else the service's default.
    public static var configuredBytes: Int {
        ProcessInfo.processInfo.environment["FBS_CACHE_BYTES"].flatMap { Int($0) } ?? 32 << 20
    }

    /// Starts a cache and its listener on `databaseURL`.
    ///
    /// - Parameters:
    ///   - databaseURL: The test database.
    ///   - bytes: The capacity; by default ``configuredBytes``.
    ///   - waitUntilCurrent: Whether to wait (up to 5 s) until the first fence came back, so that the first
    ///     requests are already served through the cache.
    public init(databaseURL: String, bytes: Int = TestCache.configuredBytes, waitUntilCurrent: Bool = true) {
        guard bytes > 0 else {
            cache = nil
            notifications = nil
            return
        }
        let cache = ExactCache(capacity: bytes)
        let notifications = EventNotifications(
            connectionString: databaseURL, waiters: EventWaiters(), cache: cache,
            logger: SecretsTranscript.logger("events", level: .error))
        notifications.start()
        self.cache = cache
        self.notifications = notifications
        guard waitUntilCurrent else { return }
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, !cache.isCurrent {
            cache.probe()
            Thread.sleep(forTimeInterval: 0.005)
        }
    }

    /// Stops the listener.
    public func stop() {
        notifications?.stop()
    }
}
