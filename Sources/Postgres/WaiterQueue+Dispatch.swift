import Dispatch

extension WaiterQueue.Timer {
    /// Runs `body` on a global dispatch queue once `deadline` has passed: how the pool and the batched reads set
    /// the timers their queues ask for. Kept out of `WaiterQueue`, which reads no clock.
    ///
    /// - Parameter body: What the timer does; typically `expire(now:timer:)` with this timer, under the owner's lock.
    public func schedule(_ body: @escaping @Sendable () -> Void) {
        let (seconds, attoseconds) = max(.zero, ContinuousClock.now.duration(to: deadline)).components
        // Rounded up, so that the timer does not go off before `deadline`.
        let nanoseconds = Int(clamping: seconds &* 1_000_000_000 &+ (attoseconds + 999_999_999) / 1_000_000_000)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds), execute: body)
    }
}
