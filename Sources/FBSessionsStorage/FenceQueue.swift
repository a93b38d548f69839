/// The fences of an ``ExactCache``, as a state machine with no clock and no threads (unit-tested on its own).
///
/// At most one fence is in flight. A request that joins while none is in flight sends one; a request that joins
/// while one is in flight cannot use it (it may have been sent before the request arrived) and waits for the next,
/// which is sent as soon as the one in flight comes back. So one fence answers every request that was waiting when
/// it was sent, and under load a fence costs one round trip per batch of requests, not per request.
///
/// Not thread-safe: ``ExactCache`` guards it with its lock.
struct FenceQueue {
    /// What the caller must do after a transition.
    struct Effects: Equatable {
        /// A fence token to send now, if any.
        var send: UInt64?
        /// Waiters to resume with `true` (the fence they needed came back).
        var passed: [UInt64] = []
        /// Waiters to resume with `false` (their fence is lost: the cache must not answer them).
        var failed: [UInt64] = []
    }

    private var nextToken: UInt64 = 1
    /// The token of the fence in flight.
    private(set) var inFlight: UInt64?
    /// Waiters by id, with the first fence token that can answer them.
    private var waiters: [(id: UInt64, needs: UInt64)] = []

    var waiting: Int { waiters.count }

    /// A request joins; it is answered by a fence sent after now.
    mutating func join(_ id: UInt64) -> Effects {
        if inFlight != nil {
            waiters.append((id, nextToken))
            return Effects()
        }
        let token = startFence()
        waiters.append((id, token))
        return Effects(send: token)
    }

    /// Sends a fence unless one is in flight (to learn whether the listener is current), with nobody waiting.
    mutating func probe() -> Effects {
        inFlight == nil ? Effects(send: startFence()) : Effects()
    }

    /// A fence came back. Returns whether it was the one in flight, and what to do.
    mutating func returned(_ token: UInt64) -> (expected: Bool, effects: Effects) {
        guard token == inFlight else { return (false, Effects()) }
        inFlight = nil
        var effects = Effects()
        var remaining: [(id: UInt64, needs: UInt64)] = []
        for waiter in waiters {
            if waiter.needs <= token {
                effects.passed.append(waiter.id)
            } else {
                remaining.append(waiter)
            }
        }
        waiters = remaining
        if !waiters.isEmpty { effects.send = startFence() }
        return (true, effects)
    }

    /// The fence in flight (if it is `token`, or any when nil) is lost: every waiter fails.
    mutating func lost(_ token: UInt64? = nil) -> Effects {
        guard inFlight != nil, token == nil || token == inFlight else { return Effects() }
        inFlight = nil
        let failed = waiters.map(\.id)
        waiters = []
        return Effects(failed: failed)
    }

    private mutating func startFence() -> UInt64 {
        let token = nextToken
        nextToken += 1
        inFlight = token
        return token
    }
}
