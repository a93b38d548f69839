import FBSessionsCore
import Foundation
import InlineExecutor
import Postgres
import Support
import Tracing

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
/// The queue's bookkeeping (ids, the cancel that comes before a read is queued, `maxQueued`, the deadlines of
/// queued reads and of reads inside a batch, the timer) is a `WaiterQueue`, the pool's own kind of queue.
///
/// Thread safety: the queue and the counts are one `Locked` state; `fetch` runs on a pool worker thread; waiters
/// are resumed from that thread, outside the lock. A request's task prefers the server's inline executor, so the
/// rest of its handler (the JSON body, handing the response back) runs right there before the next waiter is
/// resumed, and the connection takes the next batch after that.
final class ReadBatcher<Item: Sendable, Answer: Sendable>: Sendable {
    /// Answers a batch, one result per item, in the items' order.
    typealias Fetch = @Sendable (PostgresConnection, [Item]) throws -> [Result<Answer, any Error>]

    /// A read waiting for its answer.
    private struct Read: Sendable {
        let item: Item
        let continuation: CheckedContinuation<Answer, any Error>
        /// The span of the traced request that asked, if any: the batch's span hangs under the first.
        let parent: SpanContext?
    }

    private typealias Queue = WaiterQueue<Read>

    /// What the lock guards.
    private struct State {
        /// Queued reads, and reads inside a running batch until it answers them.
        var queue: Queue
        var inFlight = 0
        var batches = 0
        var reads = 0
    }

    private let pool: PostgresPool
    private let maxBatch: Int
    private let maxInFlight: Int
    private let fetch: Fetch
    /// How long one read may take in all; nil when the pool sets no statement deadline.
    private let readTimeout: Duration?
    private let state: Locked<State>
    /// Makes a `postgresql batch` span for a batch that served a traced request; nil when tracing is off.
    private let tracer: Tracer?

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
        self.state = Locked(State(queue: Queue(limit: max(1, maxQueued))))
        let configuration = database.pool.configuration
        self.readTimeout =
            readTimeout ?? configuration.connectionOptions.callTimeout.map { configuration.acquireTimeout + $0 }
        self.fetch = fetch
        self.tracer = database.tracer
    }

    /// Statements run and items answered so far.
    var statistics: (batches: Int, reads: Int) { state.withLock { ($0.batches, $0.reads) } }

    /// Reads one item, in the next batch.
    func load(_ item: Item) async throws -> Answer {
        let id = state.withLock { $0.queue.register() }
        let deadline = readTimeout.map { ContinuousClock.now + $0 }
        let parent = tracer == nil ? nil : Tracer.current?.context
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Answer, any Error>) in
                enqueue(id, Read(item: item, continuation: continuation, parent: parent), deadline: deadline)
            }
        } onCancel: {
            cancel(id)
        }
    }

    private func enqueue(_ id: Queue.ID, _ read: Read, deadline: ContinuousClock.Instant?) {
        let (admission, starts): (Queue.Admission, Bool) = state.withLock { state in
            let admission = state.queue.enqueue(id, read, deadline: deadline)
            guard case .queued = admission, state.inFlight < maxInFlight else { return (admission, false) }
            state.inFlight += 1
            return (admission, true)
        }
        switch admission {
        case .queued(let timer):
            if let timer { arm(timer) }
            if starts { startBatches() }
        case .cancelled: read.continuation.resume(throwing: CancellationError())
        case .full: read.continuation.resume(throwing: ServiceError.databaseUnavailable)
        }
    }

    private func cancel(_ id: Queue.ID) {
        state.withLock { $0.queue.cancel(id) }?.continuation.resume(throwing: CancellationError())
    }

    /// Takes the next batch, or, when nothing waits, gives up this batch slot.
    private func nextBatch() -> [Queue.Waiter]? {
        state.withLock { state in
            let batch = state.queue.takeBatch(upTo: maxBatch)
            guard !batch.isEmpty else {
                state.inFlight -= 1
                return nil
            }
            state.batches += 1
            state.reads += batch.count
            return batch
        }
    }

    /// Marks the batch's reads answered and returns which were still unanswered (a timer may have answered some
    /// at their deadline); the caller then answers exactly those.
    private func claim(_ batch: [Queue.Waiter]) -> [Bool] {
        state.withLock { $0.queue.claim(batch) }
    }

    /// Answers every read of `batch` that is still unanswered with `error`.
    private func fail(_ batch: [Queue.Waiter], with error: any Error) {
        let claimed = claim(batch)
        for (index, waiter) in batch.enumerated() where claimed[index] {
            waiter.payload.continuation.resume(throwing: error)
        }
    }

    /// Sets `timer`, which answers the reads past their deadlines.
    private func arm(_ timer: Queue.Timer) {
        timer.schedule { [weak self] in self?.expire(timer) }
    }

    /// The timer: answers every read past its deadline with ``ServiceError/databaseUnavailable``, queued or in a
    /// running batch, and sets the timer again for the next deadline, if any read is left.
    private func expire(_ timer: Queue.Timer) {
        let (expired, next) = state.withLock { $0.queue.expire(now: ContinuousClock.now, timer: timer) }
        if let next { arm(next) }
        for read in expired {
            read.continuation.resume(throwing: ServiceError.databaseUnavailable)
        }
    }

    /// Holds one pool connection and runs batches on it until the queue is empty.
    private func startBatches() {
        pool.submit({ [self] connection in
            while let batch = nextBatch() {
                let span = tracer.flatMap { Self.span(of: batch, $0) }
                defer { span?.end() }
                do {
                    let answers = try fetch(connection, batch.map(\.payload.item))
                    span?.end()
                    let claimed = claim(batch)
                    // On the pool thread, no lock held: each waiter's handler goes on here at once.
                    InlineTaskExecutor.runsResumedTasksHere {
                        for (index, waiter) in batch.enumerated() where claimed[index] {
                            waiter.payload.continuation.resume(
                                with: index < answers.count ? answers[index] : .failure(PostgresBatchMismatch()))
                        }
                    }
                } catch {
                    span?.setError("database error")
                    span?.end()
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

    /// The span of a batch that serves at least one traced request: a child of the first such request's span, with
    /// links to the others', and the number of requests served (`db.operation.batch.size`).
    private static func span(of batch: [Queue.Waiter], _ tracer: Tracer) -> Span? {
        guard let first = batch.firstIndex(where: { $0.payload.parent != nil }), let parent = batch[first].payload.parent
        else { return nil }
        let span = tracer.child("postgresql batch", of: parent)
        span.set("db.system.name", "postgresql")
        span.set("db.operation.batch.size", batch.count)
        for waiter in batch[(first + 1)...] {
            if let other = waiter.payload.parent, other != parent { span.addLink(other) }
        }
        return span
    }

    /// After a failed batch: keeps the batch slot (true) when more waits, else frees it.
    private func keepsSlot() -> Bool {
        state.withLock { state in
            if state.queue.isEmpty {
                state.inFlight -= 1
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
