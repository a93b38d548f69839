import Foundation

/// Runs blocking work (socket reads, sleeps, child processes) on a thread of its own and awaits its result.
///
/// Swift's cooperative pool has one thread per core; a test that blocks one of them can starve the very server
/// tasks it is waiting for. Every test that blocks goes through this.
public func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.stackSize = 1 << 20
        thread.start()
    }
}

/// Polls `condition` until it holds or `timeout` seconds pass (blocking; use inside ``onThread(_:)``).
/// Returns whether it held. For effects that land a moment after the action that causes them.
public func eventually(timeout: Double = 5, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try condition() { return true }
        Thread.sleep(forTimeInterval: 0.02)
    }
    return try condition()
}
