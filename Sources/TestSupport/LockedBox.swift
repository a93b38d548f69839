import Foundation

/// A value shared between a test and the threads or tasks it starts, read and written under a lock.
public final class LockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value

    public init(_ value: Value) { stored = value }

    public var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }

    /// Changes the value in place under the lock (a read-modify-write no other thread can split).
    public func update(_ change: (inout Value) -> Void) { lock.withLock { change(&stored) } }
}
