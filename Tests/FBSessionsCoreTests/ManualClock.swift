import Foundation

// The same class as in FBSessionsServiceTests/LimitedLoginHarness.swift (test targets cannot share code; it depends
// on nothing of the service, so the two copies cannot drift apart with it).

/// A clock tests move by hand (the key-set cache's refetch budget and max-age).
final class ManualClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current = Date()

    /// The time now.
    var now: Date { lock.withLock { current } }

    /// Moves the clock forward.
    func advance(_ seconds: Double) {
        lock.withLock { current = current.addingTimeInterval(seconds) }
    }
}
