import Foundation
import Support

/// A clock tests move by hand (the key-set cache's refetch budget and max-age).
public final class ManualClock: Sendable {
    private let current = Locked(Date())

    public init() {}

    /// The time now.
    public var now: Date { current.withLock { $0 } }

    /// Moves the clock forward.
    public func advance(_ seconds: Double) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}
