import Crypto
import Dispatch
import FBSessionsCore
import Foundation
import Postgres
import Support
import Synchronization

/// The one fence mechanism of the exact cache, shared by every kind of entry (docs/caching.md, "The fence, and why
/// it proves enough"): requests wait for a fence sent on the listener's connection (or their event loop's,
/// ExactCache+LoopFence.swift) after they arrived; one fence answers every request waiting when it was sent; a late
/// fence fails through the watchdog; a lost connection fails its waiters and empties the cache.
extension ExactCache {
    // MARK: The listener's side

    /// Handles a signal of the listener whose channels include ``changeChannel`` and whose fence channel is
    /// ``fenceChannel``.
    public func handle(_ signal: PostgresListener.Signal) {
        switch signal {
        case .notification(let channel, let payload) where channel == Self.changeChannel:
            invalidate(payload)
        case .fence(let payload):
            guard let token = UInt64(payload) else { return }
            let effects = guarded.withLock { state -> FenceQueue.Effects in
                let (expected, effects) = state.fences.returned(token)
                if expected { fenceReturned(on: Self.listenerConnection, &state) }
                return effects
            }
            apply(effects)
        case .notification:
            return
        case .disconnected:
            let effects = guarded.withLock { state -> FenceQueue.Effects in
                connectionLost(Self.listenerConnection, &state)
                return state.fences.lost()
            }
            // Announcements may have been missed: no key's cached limit is trusted.
            tellKeyObservers(nil)
            apply(effects)
        case .reconnected:
            let effects = guarded.withLock { state in state.fences.probe() }
            apply(effects)
        }
    }

    /// Under the lock: a fence came back on `connection` (the listener's or a loop's). When that makes it current the
    /// log's stream breaks and the cache empties (docs/caching.md, "A fence connection per event loop", rule 2).
    func fenceReturned(on connection: Int, _ state: inout State) {
        if state.log.fenceReturned(on: connection) { removeAll(&state) }
    }

    /// Under the lock: `connection` was lost; its announcements may have gone unheard, so the cache empties (rule 2).
    func connectionLost(_ connection: Int, _ state: inout State) {
        state.log.connectionLost(connection)
        removeAll(&state)
    }

    /// Waits until every change committed before this call has been handled. False when that cannot be known
    /// in time (the listener is not current, its connection was lost, or the fence timed out): the caller must
    /// then read the database.
    public func fence() async -> Bool {
        await withCheckedContinuation { join(.task($0)) }
    }

    /// ``fence()`` without a task: calls `resume` exactly once, with true once a fence sent after this call came
    /// back, or false when the cache cannot vouch for itself in time (its listener is not current, its connection was
    /// lost, or the fence timed out). It is called on the listener's or the loop's thread when the fence comes back,
    /// and on the calling thread, before this returns, when the cache is not current; it must be quick.
    public func wait(_ resume: @escaping @Sendable (Bool) -> Void) {
        if let loop = loopOnThisThread, loop.join(resume) { return }
        join(.callback(resume))
    }

    func join(_ waiter: Waiter) {
        enum Start {
            case bypass(FenceQueue.Effects)
            case wait(FenceQueue.Effects)
        }
        let start = guarded.withLock { state -> Start in
            guard state.sendFence != nil else {
                state.statistics.bypassed += 1
                return .bypass(FenceQueue.Effects())
            }
            guard state.log.isCurrent(Self.listenerConnection) else {
                state.statistics.bypassed += 1
                return .bypass(state.fences.probe())  // To become current; nobody waits for it.
            }
            state.lastWaiterID += 1
            state.waiters[state.lastWaiterID] = waiter
            return .wait(state.fences.join(state.lastWaiterID))
        }
        switch start {
        case .bypass(let effects):
            resume([(waiter, false)])
            apply(effects)
        case .wait(let effects):
            apply(effects)
        }
    }

    // MARK: Sending fences and resuming their waiters

    func apply(_ effects: FenceQueue.Effects) {
        // Most joins ride on a fence already scheduled or sent: nothing to do, and no second turn of the lock.
        guard effects.send != nil || !effects.passed.isEmpty || !effects.failed.isEmpty else { return }
        var resumed: [(Waiter, Bool)] = []
        var delay: UInt64 = 0
        guarded.withLock { state in
            for id in effects.passed {
                if let waiter = state.waiters.removeValue(forKey: id) { resumed.append((waiter, true)) }
            }
            for id in effects.failed {
                if let waiter = state.waiters.removeValue(forKey: id) { resumed.append((waiter, false)) }
            }
            state.statistics.bypassed += effects.failed.count
            if effects.send != nil {
                let since = DispatchTime.now().uptimeNanoseconds &- state.lastSentAt
                delay = since < fenceSpacing ? fenceSpacing - since : 0
            }
        }
        if let token = effects.send {
            if delay == 0 {
                send(token)
            } else {
                DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(delay))) { [self] in send(token) }
            }
        }
        resume(resumed)
    }

    /// Sends a scheduled fence, unless it was lost meanwhile.
    func send(_ token: UInt64) {
        let sender = guarded.withLock { state -> (@Sendable (String) -> Void)? in
            guard let send = state.sendFence, state.fences.sending(token) else { return nil }
            state.statistics.fencesSent += 1
            state.lastSentAt = DispatchTime.now().uptimeNanoseconds
            return send
        }
        guard let sender else { return }
        sender(String(token))
    }

    /// Resumes waiters. A parked request's callback runs here (it only hands its connection back to the HTTP
    /// server's thread). Tasks are resumed off the calling thread, spread over the processors: a request's task
    /// prefers the server's inline executor, so it goes on on whatever thread resumes it, and resumed on the
    /// listener's thread every request of a fence would run the rest of its handler there, one after another,
    /// while the listener waits to read the next notification and to send the next fence.
    func resume(_ waiters: [(Waiter, Bool)]) {
        guard !waiters.isEmpty else { return }
        var waitingTasks: [(CheckedContinuation<Bool, Never>, Bool)] = []
        for (waiter, passed) in waiters {
            switch waiter {
            case .callback(let resume): resume(passed)
            case .task(let continuation): waitingTasks.append((continuation, passed))
            }
        }
        let tasks = waitingTasks
        guard !tasks.isEmpty else { return }
        let lanes = min(tasks.count, Self.resumerLanes)
        for lane in 0..<lanes {
            DispatchQueue.global().async {
                for index in stride(from: lane, to: tasks.count, by: lanes) {
                    tasks[index].0.resume(returning: tasks[index].1)
                }
            }
        }
    }

    private static let resumerLanes = max(1, ProcessInfo.processInfo.activeProcessorCount)

    /// Fails the fence in flight if it was sent more than `fenceTimeout` ago (the watchdog's tick).
    func failLateFence() {
        let effects = guarded.withLock { state -> FenceQueue.Effects in
            // Read under the lock: a fence sent after an earlier reading would look sent in the future.
            let now = DispatchTime.now().uptimeNanoseconds
            guard let token = state.fences.inFlight, state.fences.sent, now - state.lastSentAt >= fenceTimeout else {
                return FenceQueue.Effects()
            }
            state.log.fenceTimedOut(on: Self.listenerConnection)
            return state.fences.lost(token)
        }
        apply(effects)
    }
}
