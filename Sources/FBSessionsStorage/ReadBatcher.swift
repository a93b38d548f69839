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
/// ``ServiceError/databaseUnavailable``) and by the pool's own acquire timeout for the batch.
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
    }

    private enum Phase {
        case created, cancelled
    }

    private let pool: PostgresPool
    private let maxBatch: Int
    private let maxInFlight: Int
    private let maxQueued: Int
    private let fetch: Fetch
    private let lock = NSLock()
    private var queue: [Waiter] = []
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
    ///   - fetch: Runs one batch.
    init(database: Database, maxBatch: Int = 256, maxInFlight: Int = 2, maxQueued: Int = 4096, fetch: @escaping Fetch) {
        self.pool = database.pool
        self.maxBatch = max(1, maxBatch)
        self.maxInFlight = max(1, maxInFlight)
        self.maxQueued = max(1, maxQueued)
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
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Answer, any Error>) in
                enqueue(Waiter(id: id, item: item, continuation: continuation))
            }
        } onCancel: {
            cancel(id)
        }
    }

    private enum Admission {
        case start, queued, cancelled, full
    }

    private func enqueue(_ waiter: Waiter) {
        let admission: Admission = lock.withLock {
            if phases.removeValue(forKey: waiter.id) == .cancelled { return .cancelled }
            guard queue.count < maxQueued else { return .full }
            queue.append(waiter)
            guard inFlight < maxInFlight else { return .queued }
            inFlight += 1
            return .start
        }
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
            batches += 1
            reads += count
            return batch
        }
    }

    /// Holds one pool connection and runs batches on it until the queue is empty.
    private func startBatches() {
        pool.submit({ [self] connection in
            while let batch = nextBatch() {
                do {
                    let answers = try fetch(connection, batch.map(\.item))
                    // On the pool thread, no lock held: each waiter's handler goes on here at once.
                    InlineTaskExecutor.runsResumedTasksHere {
                        for (index, waiter) in batch.enumerated() {
                            waiter.continuation.resume(
                                with: index < answers.count ? answers[index] : .failure(PostgresBatchMismatch()))
                        }
                    }
                } catch {
                    let mapped = Self.map(error)
                    for waiter in batch { waiter.continuation.resume(throwing: mapped) }
                    // The connection may be broken: give it back to the pool (which replaces it) and go on
                    // with what is queued on a fresh checkout.
                    if keepsSlot() { startBatches() }
                    throw error
                }
            }
        }, ifNotRun: { [self] error in
            // No connection: the first waiters get the error; whatever else waits tries again.
            let batch = nextBatch() ?? []
            let mapped = Self.map(error)
            for waiter in batch { waiter.continuation.resume(throwing: mapped) }
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
