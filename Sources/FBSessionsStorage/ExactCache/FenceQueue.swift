/// The fences of an ``ExactCache``, as a state machine with no clock and no threads (unit-tested on its own).
///
/// At most one fence is outstanding. A fence is first *scheduled* (``Effects/send`` names it), then *sent*: the
/// caller reports the moment with ``sending(_:)``, under the same lock, just before it writes the `NOTIFY`. A
/// request that joins while the fence is scheduled rides on it, since it will be sent after the request arrived;
/// a request that joins once it is sent cannot use it (it may have been sent before the request arrived) and waits
/// for the next, which is scheduled as soon as the one outstanding comes back. So one fence answers every request
/// that arrived before it was sent, and under load a fence costs one round trip per batch of requests, not per
/// request. The caller may hold a scheduled fence back a little (``ExactCache``'s spacing) so that a batch grows.
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
    /// The token of the fence outstanding: scheduled, or sent and not yet back.
    private(set) var inFlight: UInt64?
    /// Whether the outstanding fence has been sent (``sending(_:)``).
    private(set) var sent = false
    /// Waiters by id, with the first fence token that can answer them.
    private var waiters: [(id: UInt64, needs: UInt64)] = []

    var waiting: Int { waiters.count }

    /// A request joins; it is answered by a fence sent after now.
    mutating func join(_ id: UInt64) -> Effects {
        if let token = inFlight {
            waiters.append((id, sent ? nextToken : token))
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

    /// The scheduled fence `token` is being sent now; false when it is no longer outstanding (lost meanwhile), and
    /// then it must not be sent.
    mutating func sending(_ token: UInt64) -> Bool {
        guard token == inFlight, !sent else { return false }
        sent = true
        return true
    }

    /// A fence came back. Returns whether it was the one in flight, and what to do.
    mutating func returned(_ token: UInt64) -> (expected: Bool, effects: Effects) {
        guard token == inFlight, sent else { return (false, Effects()) }
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
        sent = false
        return token
    }
}
