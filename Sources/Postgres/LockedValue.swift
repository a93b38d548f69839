import Foundation

/// A value guarded by an `NSLock`.
///
/// Used instead of `Synchronization.Mutex` because on Linux `Mutex` waits on raw futexes that
/// ThreadSanitizer cannot see, so `swift test --sanitize=thread` reported false races; `NSLock` is a
/// pthread mutex, which it understands.
///
/// Ownership: owns the value; it never leaves the lock except as copies returned by `withLock`.
/// Thread safety: every access goes through `withLock`, which is why the class is `@unchecked Sendable`.
final class LockedValue<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    /// Creates the box.
    ///
    /// - Parameter value: The initial value.
    init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value.
    ///
    /// - Parameter body: Reads or changes the value; must not block or call back into the owner.
    /// - Returns: What `body` returns.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
