import Foundation

/// A value that threads share, reachable only under its lock: the project's one lock primitive
/// (docs/conventions.md, "Locks").
///
/// Why this and not the alternatives:
/// - Not `Synchronization.Mutex`: on Linux it waits on raw futexes that ThreadSanitizer cannot see, so
///   `swift test --sanitize=thread` (`tools/sanitizers/run thread`) reported false races. `NSLock` is a pthread
///   mutex, which ThreadSanitizer understands.
/// - Not an `NSLock` beside hand-guarded `var`s: the compiler cannot check which `var`s a lock guards, nor that
///   every access takes it. Here the value is reachable only inside ``withLock(_:)``.
///
/// How to hold it: only for a few steps on the value. Never across an `await` (`withLock` takes a synchronous
/// closure, so the compiler refuses one), never while calling code that may take another lock or call back into
/// the owner (handlers, callbacks, continuations: copy what they need out of the lock, then call them). Where a
/// lock guards several fields, make them one `Locked<State>` of a small struct. Atomics (`Synchronization.Atomic`)
/// stay for single counters and flags on hot paths, and `NSCondition` for a thread that must sleep until another
/// signals it (a worker's mailbox), which this type cannot do.
///
/// Cost: one uncontended `pthread_mutex_lock`/`unlock` pair per ``withLock(_:)``; `withLock` is inlinable, so a
/// caller in another module calls it specialized, with its closure on the stack (no allocation per call).
///
/// Ownership: owns the value; it leaves the lock only as what `withLock`'s body returns.
/// Sendable: when `Value` is, because the value is only ever reached under the lock (`@unchecked`: the compiler
/// cannot see a lock).
public final class Locked<Value> {
    @usableFromInline let lock = NSLock()
    @usableFromInline var value: Value

    /// Creates the lock over `value`.
    ///
    /// - Parameter value: The initial value.
    public init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value: one lock and one unlock.
    ///
    /// - Parameter body: Reads or changes the value. Must not block for long, `await`, or call code that may take
    ///   another lock or come back here (this lock is not reentrant: that deadlocks).
    /// - Returns: What `body` returns.
    @inlinable
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// Sendable: the value is reached only under the lock (``Locked``), so a `Sendable` value may be shared.
extension Locked: @unchecked Sendable where Value: Sendable {}
