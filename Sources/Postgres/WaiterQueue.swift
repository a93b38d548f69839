/// The bookkeeping of callers that wait for their turn, first in first out: the pool's callers waiting for a
/// connection, a batcher's reads waiting for a batch.
///
/// A pure state machine: it holds ids, payloads and deadlines as values, reads no clock, takes no lock and
/// resumes nothing. Each transition returns what the owner must do (fail these payloads, set a timer for that
/// deadline), and the owner does it with its own lock, clock and continuations. So the cancel-before-enqueue
/// race, the FIFO order, the limit and the deadlines are written once, and tested without a database.
///
/// A waiter's life: `register()` gives it an id before it has a payload, so that a cancellation arriving before
/// the payload is marked and not lost; `enqueue` (or `admit`, for an owner that may serve it at once) ends the
/// registration. Queued, it leaves by `takeFirst()` (served), `takeBatch(upTo:)` (taken into a batch, still owed
/// an answer until `claim(_:)`), `cancel(_:)`, `expire(now:timer:)` at its deadline, or `drain()`.
///
/// Timers: the queue asks for a timer at the earliest deadline it holds (from `enqueue` when a waiter brings an
/// earlier deadline than the current timer's, or none is set; from `expire` for the next deadline), and the owner
/// calls `expire` with that timer when it goes off. A timer superseded by an earlier one still expires what is due
/// but asks for no next one, so timers never multiply.
///
/// Thread safety: a value; its owner keeps it under its own lock.
public struct WaiterQueue<Payload> {
    /// A waiter's id, unique within its queue.
    public typealias ID = UInt64

    /// A queued waiter.
    public struct Waiter {
        /// Its id, from `register()`.
        public let id: ID
        /// What the owner needs to serve or fail it.
        public let payload: Payload
        /// When it gives up, if ever.
        public let deadline: ContinuousClock.Instant?
    }

    /// A timer the owner is to set: at `deadline`, call `expire(now:timer:)` with it.
    public struct Timer: Sendable, Equatable {
        /// When it should go off.
        public let deadline: ContinuousClock.Instant
        /// Tells this timer from a superseded one with the same deadline.
        let number: UInt64
    }

    /// What `enqueue` did with a waiter.
    public enum Admission {
        /// Queued; the owner sets `timer` when there is one.
        case queued(timer: Timer?)
        /// It was cancelled before it arrived: the owner fails it with `CancellationError`.
        case cancelled
        /// `limit` waiters are queued already: the owner refuses it.
        case full
    }

    private enum Phase {
        /// Has an id, not yet a payload.
        case registered
        /// Cancelled while registered: refused when it arrives.
        case cancelled
        /// In `queue`.
        case queued
    }

    /// The most waiters queued at once (at least 0).
    public let limit: Int
    private var queue: [Waiter] = []
    private var phases: [ID: Phase] = [:]
    /// Waiters taken into a batch and not yet claimed, by id: their deadlines still count.
    private var owed: [ID: Waiter] = [:]
    /// The timer the owner has set last, if it has not gone off.
    private var timer: Timer?
    private var lastID: ID = 0
    private var lastTimer: UInt64 = 0

    /// Creates an empty queue.
    ///
    /// - Parameter limit: The most waiters queued at once; below 0 counts as 0.
    public init(limit: Int) {
        self.limit = max(0, limit)
    }

    /// The number of queued waiters (not those taken into a batch).
    public var count: Int { queue.count }

    /// Whether no waiter is queued.
    public var isEmpty: Bool { queue.isEmpty }

    /// The earliest deadline of a queued waiter or of one taken into a batch and not yet claimed.
    public var nextDeadline: ContinuousClock.Instant? {
        (queue.compactMap(\.deadline) + owed.values.compactMap(\.deadline)).min()
    }

    /// Gives a new waiter its id, before it has a payload.
    ///
    /// - Returns: The id, for `enqueue` or `admit` and for `cancel`.
    public mutating func register() -> ID {
        lastID += 1
        phases[lastID] = .registered
        return lastID
    }

    /// Ends `id`'s registration without queueing it, for an owner that serves it at once when it can.
    ///
    /// - Parameter id: The id from `register()`.
    /// - Returns: False when it was cancelled first (the owner fails it with `CancellationError`).
    public mutating func admit(_ id: ID) -> Bool {
        phases.removeValue(forKey: id) != .cancelled
    }

    /// Ends `id`'s registration and queues it last, unless it was cancelled first or the queue is full.
    ///
    /// - Parameters:
    ///   - id: The id from `register()`.
    ///   - payload: What the owner needs to serve or fail it.
    ///   - deadline: When it gives up, or `nil` for never.
    /// - Returns: What became of it, and the timer to set if it was queued.
    public mutating func enqueue(_ id: ID, _ payload: Payload, deadline: ContinuousClock.Instant?) -> Admission {
        guard admit(id) else { return .cancelled }
        guard queue.count < limit else { return .full }
        queue.append(Waiter(id: id, payload: payload, deadline: deadline))
        phases[id] = .queued
        guard let deadline, timer.map({ deadline < $0.deadline }) ?? true else { return .queued(timer: nil) }
        return .queued(timer: newTimer(at: deadline))
    }

    /// Cancels waiter `id`: marked if it is only registered, removed if it is queued, left alone otherwise (taken,
    /// expired, unknown), since then it has its answer or will get one.
    ///
    /// - Parameter id: The id from `register()`.
    /// - Returns: The payload of a waiter it removed from the queue; the owner fails it with `CancellationError`.
    public mutating func cancel(_ id: ID) -> Payload? {
        switch phases[id] {
        case .registered:
            phases[id] = .cancelled
            return nil
        case .queued:
            phases[id] = nil
            guard let index = queue.firstIndex(where: { $0.id == id }) else { return nil }
            return queue.remove(at: index).payload
        case .cancelled, nil:
            return nil
        }
    }

    /// Takes the first waiter out of the queue, for the owner to serve; its deadline no longer counts.
    ///
    /// - Returns: Its payload, or `nil` when none is queued.
    public mutating func takeFirst() -> Payload? {
        guard !queue.isEmpty else { return nil }
        let waiter = queue.removeFirst()
        phases[waiter.id] = nil
        return waiter.payload
    }

    /// Takes the first `maxCount` waiters (fewer if fewer are queued) into a batch. They stay owed an answer
    /// until `claim(_:)`: `expire` still fails them at their deadlines, and `claim` then tells the owner to skip
    /// them.
    ///
    /// - Parameter maxCount: The most waiters to take.
    /// - Returns: The batch, in queue order; empty when none is queued.
    public mutating func takeBatch(upTo maxCount: Int) -> [Waiter] {
        let count = min(max(0, maxCount), queue.count)
        let batch = Array(queue.prefix(count))
        queue.removeFirst(count)
        for waiter in batch {
            phases[waiter.id] = nil
            owed[waiter.id] = waiter
        }
        return batch
    }

    /// Settles a batch from `takeBatch(upTo:)`: which of its waiters the owner still answers.
    ///
    /// - Parameter batch: The batch.
    /// - Returns: One flag per waiter, in order: true when it is still owed (and no longer is), false when
    ///   `expire` failed it already or it was claimed before.
    public mutating func claim(_ batch: [Waiter]) -> [Bool] {
        batch.map { owed.removeValue(forKey: $0.id) != nil }
    }

    /// Removes every waiter whose deadline is at or before `now`, queued or owed by a batch. Called when `timer`
    /// goes off.
    ///
    /// - Parameters:
    ///   - now: The owner's clock reading.
    ///   - timer: The timer that went off.
    /// - Returns: The payloads of the waiters past their deadlines, in the order of their deadlines, for the owner
    ///   to fail; and the timer to set next, when `timer` was the current one and a deadline is left.
    public mutating func expire(
        now: ContinuousClock.Instant, timer: Timer
    ) -> (expired: [Payload], timer: Timer?) {
        var expired: [(deadline: ContinuousClock.Instant, waiter: Waiter)] = []
        queue.removeAll { waiter in
            guard let deadline = waiter.deadline, deadline <= now else { return false }
            expired.append((deadline, waiter))
            return true
        }
        for (_, waiter) in expired { phases[waiter.id] = nil }
        for (id, waiter) in owed {
            if let deadline = waiter.deadline, deadline <= now {
                expired.append((deadline, waiter))
                owed[id] = nil
            }
        }
        expired.sort { ($0.deadline, $0.waiter.id) < ($1.deadline, $1.waiter.id) }
        let payloads = expired.map(\.waiter.payload)
        guard timer == self.timer else { return (payloads, nil) }
        self.timer = nil
        return (payloads, nextDeadline.map { newTimer(at: $0) })
    }

    /// Empties the queue, for shutdown. Waiters owed by a batch stay owed, and registrations stay as they are.
    ///
    /// - Returns: The payloads of the queued waiters, in queue order, for the owner to fail.
    public mutating func drain() -> [Payload] {
        let drained = queue
        queue = []
        for waiter in drained { phases[waiter.id] = nil }
        return drained.map(\.payload)
    }

    private mutating func newTimer(at deadline: ContinuousClock.Instant) -> Timer {
        lastTimer += 1
        let new = Timer(deadline: deadline, number: lastTimer)
        timer = new
        return new
    }
}

extension WaiterQueue: Sendable where Payload: Sendable {}
extension WaiterQueue.Waiter: Sendable where Payload: Sendable {}
extension WaiterQueue.Admission: Sendable where Payload: Sendable {}
