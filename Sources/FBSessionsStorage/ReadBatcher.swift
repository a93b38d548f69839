import FBSessionsCore
import Foundation
import InlineExecutor
import Postgres

/// Coalesces concurrent reads of one kind into one statement (docs/caching.md, "Batched reads").
///
/// A read that arrives while fewer than `maxInFlight` batches run starts a batch at once, so a lone request adds
/// no latency. A read that arrives while they all run waits in the queue; when a batch's statement returns, the
/// same connection takes everything queued (at most `maxBatch`) as the next batch, so under load one statement,
/// one backend wake-up and one round trip serve many requests.
///
/// Each item is a whole request (its ids, its app, its API key to confirm), and `fetch` answers each item on
/// its own: a failure for one item (its key revoked, its session in another app) is that item's answer only. An
/// error of the statement itself goes to every item of the batch.
///
/// Every batch's statement is sent after all its items arrived, so it sees every change committed before any of
/// them arrived: batching never returns an older snapshot than a per-request statement would.
///
/// Cancellation: a queued item whose task is cancelled leaves the queue with `CancellationError`; an item whose
/// batch is running gets the batch's answer. Waiting is bounded by `maxQueued` (then
/// ``ServiceError/databaseUnavailable``) and by each read's own deadline: the time a read on its own could take
/// (the pool's acquire timeout plus one statement's deadline, `PostgresPool.Configuration`). A read still
/// unanswered at its deadline, queued behind a stuck batch or inside one, gets
/// ``ServiceError/databaseUnavailable`` then, from a timer; the batch's answer, when it comes, skips it. So no read
/// waits on a stuck connection longer than it would have without batching.
///
/// Thread safety: the queue is guarded by a lock; `fetch` runs on a pool worker thread; waiters are resumed from
/// that thread, outside the lock. A request's task prefers the server's inline executor, so the rest of its
/// handler (the JSON body, handing the response back) runs right there before the next waiter is resumed, and
/// the connection takes the next batch after that.
final class ReadBatcher<Item: Sendable, Answer: Sendable>: @unchecked Sendable {
    /// Answers a batch, one result per item, in the items' order.
    typealias Fetch = @Sendable (PostgresConnection, [Item]) throws -> [Result<Answer, any Error>]

    private struct Waiter {
        let id: UInt64
        let item: Item
        let continuation: CheckedContinuation<Answer, any Error>
        /// When the read gives up, if it has a deadline.
        let deadline: ContinuousClock.Instant?
    }

    private enum Phase {
        case created, cancelled
    }

    private let pool: PostgresPool
    private let maxBatch: Int
    private let maxInFlight: Int
    private let maxQueued: Int
    private let fetch: Fetch
    /// How long one read may take in all; nil when the pool sets no statement deadline.
    private let readTimeout: Duration?
    private let lock = NSLock()
    private var queue: [Waiter] = []
    /// Reads taken into a running batch and not answered yet, by id.
    private var inBatch: [UInt64: Waiter] = [:]
    /// The deadline the timer is set for, if it is set.
    private var timerDeadline: ContinuousClock.Instant?
    private var phases: [UInt64: Phase] = [:]
    private var inFlight = 0
    private var lastID: UInt64 = 0
    private var batches = 0
    private var reads = 0

    /// Creates a batcher.
    ///
    /// - Parameters:
    ///   - database: The pool to run batches on.
    ///   - maxBatch: The most items in one statement.
    ///   - maxInFlight: The most batches running at once (each holds one pool connection).
    ///   - maxQueued: The most items waiting; beyond it a read fails as the database being unavailable.
    ///   - readTimeout: How long one read may take in all; by default the pool's acquire timeout plus its
    ///     statement deadline (none when the pool has none).
    ///   - fetch: Runs one batch.
    init(
        database: Database, maxBatch: Int = 256, maxInFlight: Int = 2, maxQueued: Int = 4096,
        readTimeout: Duration? = nil, fetch: @escaping Fetch
    ) {
        self.pool = database.pool
        self.maxBatch = max(1, maxBatch)
        self.maxInFlight = max(1, maxInFlight)
        self.maxQueued = max(1, maxQueued)
        let configuration = database.pool.configuration
        self.readTimeout =
            readTimeout ?? configuration.connectionOptions.callTimeout.map { configuration.acquireTimeout + $0 }
        self.fetch = fetch
    }

    /// Statements run and items answered so far.
    var statistics: (batches: Int, reads: Int) { lock.withLock { (batches, reads) } }

    /// Reads one item, in the next batch.
    func load(_ item: Item) async throws -> Answer {
        let id = lock.withLock {
            lastID += 1
            phases[lastID] = .created
            return lastID
        }
        let deadline = readTimeout.map { ContinuousClock.now + $0 }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Answer, any Error>) in
                enqueue(Waiter(id: id, item: item, continuation: continuation, deadline: deadline))
            }
        } onCancel: {
            cancel(id)
        }
    }

    private enum Admission {
        case start, queued, cancelled, full
    }

    private func enqueue(_ waiter: Waiter) {
        var arm: ContinuousClock.Instant?
        let admission: Admission = lock.withLock {
            if phases.removeValue(forKey: waiter.id) == .cancelled { return .cancelled }
            guard queue.count < maxQueued else { return .full }
            queue.append(waiter)
            if timerDeadline == nil, let deadline = waiter.deadline {
                timerDeadline = deadline
                arm = deadline
            }
            guard inFlight < maxInFlight else { return .queued }
            inFlight += 1
            return .start
        }
        if let arm { armTimer(for: arm) }
        switch admission {
        case .start: startBatches()
        case .queued: break
        case .cancelled: waiter.continuation.resume(throwing: CancellationError())
        case .full: waiter.continuation.resume(throwing: ServiceError.databaseUnavailable)
        }
    }

    private func cancel(_ id: UInt64) {
        let waiter: Waiter? = lock.withLock {
            if phases[id] == .created {
                phases[id] = .cancelled
                return nil
            }
            guard let index = queue.firstIndex(where: { $0.id == id }) else { return nil }
            return queue.remove(at: index)
        }
        waiter?.continuation.resume(throwing: CancellationError())
    }

    /// Takes the next batch, or, when nothing waits, gives up this batch slot.
    private func nextBatch() -> [Waiter]? {
        lock.withLock {
            guard !queue.isEmpty else {
                inFlight -= 1
                return nil
            }
            let count = min(maxBatch, queue.count)
            let batch = Array(queue.prefix(count))
            queue.removeFirst(count)
            for waiter in batch { inBatch[waiter.id] = waiter }
            batches += 1
            reads += count
            return batch
        }
    }

    /// Removes the batch's reads that are still unanswered (a timer may have answered some at their deadline);
    /// the caller then answers exactly those.
    private func claim(_ batch: [Waiter]) -> [Bool] {
        lock.withLock { batch.map { inBatch.removeValue(forKey: $0.id) != nil } }
    }

    /// Answers every read of `batch` that is still unanswered with `error`.
    private func fail(_ batch: [Waiter], with error: any Error) {
        let claimed = claim(batch)
        for (index, waiter) in batch.enumerated() where claimed[index] {
            waiter.continuation.resume(throwing: error)
        }
    }

    /// Sets the timer to go off at `deadline`.
    private func armTimer(for deadline: ContinuousClock.Instant) {
        let (seconds, attoseconds) = max(.zero, ContinuousClock.now.duration(to: deadline)).components
        let nanoseconds = Int(clamping: seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [weak self] in
            self?.expire()
        }
    }

    /// The timer: answers every read past its deadline with ``ServiceError/databaseUnavailable``, queued or in a
    /// running batch, and sets the timer again for the next deadline, if any read is left.
    private func expire() {
        let now = ContinuousClock.now
        var next: ContinuousClock.Instant?
        let expired: [Waiter] = lock.withLock {
            var expired: [Waiter] = []
            queue.removeAll { waiter in
                guard let deadline = waiter.deadline, deadline <= now else { return false }
                expired.append(waiter)
                return true
            }
            for (id, waiter) in inBatch {
                if let deadline = waiter.deadline, deadline <= now {
                    expired.append(waiter)
                    inBatch[id] = nil
                }
            }
            let remaining = (queue.compactMap(\.deadline) + inBatch.values.compactMap(\.deadline)).min()
            timerDeadline = remaining
            next = remaining
            return expired
        }
        if let next { armTimer(for: next) }
        for waiter in expired {
            waiter.continuation.resume(throwing: ServiceError.databaseUnavailable)
        }
    }

    /// Holds one pool connection and runs batches on it until the queue is empty.
    private func startBatches() {
        pool.submit({ [self] connection in
            while let batch = nextBatch() {
                do {
                    let answers = try fetch(connection, batch.map(\.item))
                    let claimed = claim(batch)
                    // On the pool thread, no lock held: each waiter's handler goes on here at once.
                    InlineTaskExecutor.runsResumedTasksHere {
                        for (index, waiter) in batch.enumerated() where claimed[index] {
                            waiter.continuation.resume(
                                with: index < answers.count ? answers[index] : .failure(PostgresBatchMismatch()))
                        }
                    }
                } catch {
                    fail(batch, with: Self.map(error))
                    // The connection may be broken: give it back to the pool (which replaces it) and go on
                    // with what is queued on a fresh checkout.
                    if keepsSlot() { startBatches() }
                    throw error
                }
            }
        }, ifNotRun: { [self] error in
            // No connection: the first waiters get the error; whatever else waits tries again.
            let batch = nextBatch() ?? []
            fail(batch, with: Self.map(error))
            if !batch.isEmpty, keepsSlot() { startBatches() }
        })
    }

    /// After a failed batch: keeps the batch slot (true) when more waits, else frees it.
    private func keepsSlot() -> Bool {
        lock.withLock {
            if queue.isEmpty {
                inFlight -= 1
                return false
            }
            return true
        }
    }

    private static func map(_ error: any Error) -> any Error {
        if let error = error as? PostgresError, error.isUnavailable { return ServiceError.databaseUnavailable }
        return error
    }
}

/// A batch statement returned fewer answers than items (a bug in its `fetch`).
struct PostgresBatchMismatch: Error, CustomStringConvertible {
    var description: String { "a batched read returned fewer answers than it had requests" }
}
