import Foundation
import Support

/// Long-poll readers of the change feed, suspended until their app has news.
///
/// A reader takes the app's ``Generation`` *before* it reads the feed, and after an empty read calls
/// ``wait(appID:after:timeout:)`` with it: a notification that arrived in between makes the wait return at once,
/// so none is lost. The waiting task holds no thread: it is a continuation in this registry, resumed by
/// ``notify(appID:)`` (a `NOTIFY` for the app), ``notifyAll()`` (the listener reconnected, so notifications may
/// have been missed), ``shutdown()``, its timeout, or its task's cancellation; in every case it leaves the
/// registry.
///
/// Thread safety: every method may be called from any thread or task; `notify` and `notifyAll` never block
/// beyond a short lock, so the database listener's thread may call them.
public final class EventWaiters: Sendable {
    /// A snapshot of an app's notification count, taken before reading.
    public struct Generation: Sendable, Equatable {
        fileprivate let app: UInt64
        fileprivate let epoch: UInt64
    }

    private enum Outcome: Sendable {
        case notified, timedOut, cancelled, full
    }

    private struct Waiter {
        let appID: String
        let continuation: CheckedContinuation<Outcome, Never>
        var timer: Task<Void, Never>?
    }

    private struct State {
        var generations: [String: UInt64] = [:]
        var epoch: UInt64 = 0
        var waiters: [UInt64: Waiter] = [:]
        var byApp: [String: Set<UInt64>] = [:]
        var lastID: UInt64 = 0
        var isShutDown = false

        func generation(_ appID: String) -> Generation {
            Generation(app: generations[appID] ?? 0, epoch: epoch)
        }

        mutating func remove(_ id: UInt64) -> Waiter? {
            guard let waiter = waiters.removeValue(forKey: id) else { return nil }
            byApp[waiter.appID]?.remove(id)
            if byApp[waiter.appID]?.isEmpty == true {
                byApp[waiter.appID] = nil
            }
            return waiter
        }
    }

    /// The most readers that may wait at once; more are refused with ``EventWaitersError``.
    public let maxWaiters: Int
    private let state = Locked(State())

    /// Creates an empty registry.
    ///
    /// - Parameter maxWaiters: The most readers waiting at once (at least 1). Default 10 000.
    public init(maxWaiters: Int = 10_000) {
        self.maxWaiters = max(1, maxWaiters)
    }

    /// True after ``shutdown()``.
    public var isShutDown: Bool {
        state.withLock { $0.isShutDown }
    }

    /// Readers waiting right now.
    public var count: Int {
        state.withLock { $0.waiters.count }
    }

    /// The app's generation now; pass it to ``wait(appID:after:timeout:)`` after reading.
    public func generation(appID: String) -> Generation {
        state.withLock { $0.generation(appID) }
    }

    /// Suspends until the app is notified after `generation`, or `timeout` passes.
    ///
    /// - Parameters:
    ///   - appID: The app.
    ///   - generation: What ``generation(appID:)`` said before the caller last read the feed.
    ///   - timeout: The longest wait.
    /// - Returns: True when notified (at once if that happened since `generation`), false on timeout.
    /// - Throws: ``EventWaitersError`` when ``maxWaiters`` readers already wait; `CancellationError` when the
    ///   task is cancelled.
    public func wait(appID: String, after generation: Generation, timeout: Duration) async throws -> Bool {
        let id = state.withLock { state in
            state.lastID += 1
            return state.lastID
        }
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                let immediate: Outcome? = state.withLock { state in
                    // Checked under the lock: a cancellation handler that runs later finds the waiter registered.
                    if Task.isCancelled { return .cancelled }
                    if state.generation(appID) != generation { return .notified }
                    if state.isShutDown { return .timedOut }
                    if state.waiters.count >= maxWaiters { return .full }
                    state.waiters[id] = Waiter(appID: appID, continuation: continuation)
                    state.byApp[appID, default: []].insert(id)
                    return nil
                }
                if let immediate {
                    continuation.resume(returning: immediate)
                    return
                }
                let timer = Task { [weak self] in
                    do {
                        try await Task.sleep(for: timeout)
                    } catch {
                        return  // Cancelled: the waiter was answered otherwise.
                    }
                    self?.finish(id, .timedOut)
                }
                let stillWaiting = state.withLock { state in
                    guard state.waiters[id] != nil else { return false }
                    state.waiters[id]?.timer = timer
                    return true
                }
                if !stillWaiting {
                    timer.cancel()
                }
            }
        } onCancel: {
            finish(id, .cancelled)
        }
        switch outcome {
        case .notified: return true
        case .timedOut: return false
        case .cancelled: throw CancellationError()
        case .full: throw EventWaitersError(maxWaiters: maxWaiters)
        }
    }

    /// Wakes every reader of the app and advances its generation.
    ///
    /// - Parameter appID: The app, as sent in the notification's payload.
    public func notify(appID: String) {
        let woken = state.withLock { state in
            state.generations[appID, default: 0] &+= 1
            let ids = state.byApp[appID] ?? []
            return ids.compactMap { state.remove($0) }
        }
        resume(woken, .notified)
    }

    /// Wakes every reader of every app, for when notifications may have been missed.
    public func notifyAll() {
        let woken = state.withLock { state in
            state.epoch &+= 1
            let ids = Array(state.waiters.keys)
            return ids.compactMap { state.remove($0) }
        }
        resume(woken, .notified)
    }

    /// Answers every waiting reader now, as if its time were up, and makes later waits return at once; for a
    /// graceful shutdown, so long polls do not hold connections open. Calling it again does nothing more.
    public func shutdown() {
        let woken = state.withLock { state in
            state.isShutDown = true
            let ids = Array(state.waiters.keys)
            return ids.compactMap { state.remove($0) }
        }
        resume(woken, .timedOut)
    }

    private func finish(_ id: UInt64, _ outcome: Outcome) {
        guard let waiter = state.withLock({ $0.remove(id) }) else { return }
        resume([waiter], outcome)
    }

    private func resume(_ waiters: [Waiter], _ outcome: Outcome) {
        for waiter in waiters {
            waiter.timer?.cancel()  // A no-op for the timer that is finishing itself.
            waiter.continuation.resume(returning: outcome)
        }
    }
}

/// Too many long-poll readers wait already; the API answers 503 with `Retry-After`.
public struct EventWaitersError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The limit that was reached.
    public let maxWaiters: Int

    /// Describes the error without any request data.
    public var description: String {
        "EventWaitersError(maxWaiters: \(maxWaiters))"
    }
}
