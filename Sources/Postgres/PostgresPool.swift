import Glibc
import InlineExecutor
import Support

/// A fixed-size pool of PostgreSQL connections, each with its own worker thread.
///
/// Bodies run synchronously on the pool's worker threads (one Foundation `Thread` per connection), never on
/// Swift's cooperative thread pool: an async caller suspends on a continuation while its body runs, so a
/// request waiting for the database holds neither a cooperative thread nor a server thread.
///
/// Waiting: when all `size` connections are busy, callers queue first-in first-out. At most `maxWaiters`
/// wait; the next caller gets `.poolExhausted` at once. A waiter not served within `acquireTimeout` gets
/// `.poolTimeout`; a cancelled waiter leaves the queue with `CancellationError`. No thread blocks while
/// waiting. The queue's bookkeeping (ids, the cancel that comes before the waiter is queued, the limit, the
/// deadlines) is a `WaiterQueue`; the pool holds it under its lock and resumes what it returns.
///
/// Reconnecting: connections open lazily, on first use. A connection found broken is closed and the next
/// use opens a new one; failing to connect throws `.connectionFailed` within about `connectTimeout`. Before
/// lending an idle connection, the worker checks its socket without a round trip (see
/// `PostgresConnection.isAliveWhileIdle()`); a session the server ended (restart, `pg_terminate_backend`)
/// is replaced before the body starts. If a stale connection slips through that check, the rule is:
/// `query(_:)`, `execute(_:)` and the `BEGIN` of `transaction(_:)` are retried once on a fresh connection
/// when their first statement fails with `.connectionLost` on a connection reused from an earlier
/// checkout: the pool wrote that statement and no caller code has run yet. A caller's body, in
/// `withConnection(_:)` or inside `transaction(_:)`, is never rerun, because it may already have had
/// effects; its error (`.connectionLost`, `isUnavailable`) reaches the caller and the next use reconnects.
/// The retry can run a statement twice only if the server executed it and then died before answering, on
/// the first statement sent over an idle connection; for the single statements the pool retries, that
/// window is the same as any client's retry after a lost connection.
///
/// Statements the server refused before running them (`PostgresError.statementDidNotRun`: a prepared
/// statement the server session does not have, 26000; one it already has, 42P05; a protocol violation, 08P01;
/// a cached plan whose result changed, 0A000) are never an answer about the data: outside a transaction the
/// connection sends the statement again at once as the unnamed statement; inside one, the refusal aborted the
/// transaction, and `transaction(_:)` runs it once more on a fresh connection (its bodies may run again anyway,
/// see there). 08P01, 26000 and 42P05 also close the connection after its current use. Which statements are
/// prepared at all is `Configuration.preparedStatements`; an automatic pool stops preparing when its
/// connections see a pooler in transaction mode (`PostgresStatementPolicy`).
///
/// Deadlines: every statement waits at most `statementTimeout` plus `deadlineMargin` for its answer (see
/// `PostgresConnection`); then the connection cancels it in the background, closes, and the caller gets
/// `.timedOut` (unavailable), so a frozen or unreachable server frees the worker and answers the caller in
/// bounded time; the next use connects anew, within `connectTimeout` per host address.
///
/// Ownership: owns its workers, their threads and connections; `shutdown()` (also run by `deinit`) ends them.
/// Thread safety: all methods may be called from any thread or task; the state is guarded by one lock.
public final class PostgresPool: Sendable {
    /// The pool's settings.
    public let configuration: Configuration
    private let state: Locked<State>
    private let workers: [PostgresPoolWorker]
    /// The prepared-statement choice of every connection, and what they found out.
    private let policy: PostgresStatementPolicy

    private struct State {
        var idle: [PostgresPoolWorker]
        /// Callers waiting for a worker; each deadline is its acquire timeout.
        var waiters: WaiterQueue<PostgresPoolJob>
        var inUse = 0
        var open = 0
        var isShutDown = false
    }

    /// Creates a pool and starts its worker threads. No connection opens until the first call.
    ///
    /// - Parameter configuration: The settings; `size` below 1 counts as 1.
    public init(configuration: Configuration) {
        var configuration = configuration
        configuration.size = max(1, configuration.size)
        configuration.maxWaiters = max(0, configuration.maxWaiters)
        self.configuration = configuration
        let policy = PostgresStatementPolicy(
            mode: configuration.preparedStatements, onDetected: configuration.onTransactionPoolerDetected)
        self.policy = policy
        let workers = (0..<configuration.size).map { _ in
            PostgresPoolWorker(configuration: configuration, policy: policy)
        }
        self.workers = workers
        self.state = Locked(
            State(idle: workers.reversed(), waiters: WaiterQueue(limit: configuration.maxWaiters)))
        for (index, worker) in workers.enumerated() {
            worker.pool = self
            worker.start(name: "pg-pool-\(index)")
        }
    }

    deinit {
        shutdown()
    }

    /// Whether the pool's connections prepare statements by name now: false with
    /// ``PostgresPreparedStatements/never``, and for an automatic pool once it found a pooler in transaction mode.
    public var preparesStatements: Bool {
        policy.prepares
    }

    /// Current use of the pool.
    public var statistics: Statistics {
        state.withLock { state in
            Statistics(
                size: configuration.size,
                open: state.open,
                inUse: state.inUse,
                waiting: state.waiters.count
            )
        }
    }

    /// Runs `body` with a pooled connection on the connection's worker thread and returns its result.
    ///
    /// `body` runs synchronously and may run several statements or a `connection.transaction`. It is never
    /// rerun by the pool. If it leaves a transaction open, the pool rolls it back.
    ///
    /// - Parameter body: The work; it must not keep the connection after returning.
    /// - Returns: What `body` returns.
    /// - Throws: `PostgresError` (`.poolExhausted`, `.poolTimeout`, `.poolClosed`, `.connectionFailed`, or
    ///   from `body`), `CancellationError` if the task is cancelled while waiting, or what `body` throws.
    public func withConnection<T: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) throws -> T
    ) async throws -> T {
        try await perform(retry: .never, body)
    }

    /// Runs one statement on a pooled connection and returns its rows.
    ///
    /// - Parameter query: The statement and its parameters.
    /// - Returns: The rows.
    /// - Throws: `PostgresError`, or `CancellationError` while waiting.
    public func query(_ query: PostgresQuery) async throws -> PostgresRows {
        try await perform(retry: .ifFirstStatementLost) { connection in try connection.query(query) }
    }

    /// Runs one statement on a pooled connection and returns the number of rows it affected.
    ///
    /// - Parameter query: The statement and its parameters.
    /// - Returns: The affected-row count.
    /// - Throws: `PostgresError`, or `CancellationError` while waiting.
    @discardableResult
    public func execute(_ query: PostgresQuery) async throws -> Int {
        try await perform(retry: .ifFirstStatementLost) { connection in try connection.execute(query) }
    }

    /// Runs `body` in a transaction on a pooled connection (`BEGIN`, then `COMMIT`, or `ROLLBACK` if it throws).
    ///
    /// When PostgreSQL aborts the transaction as a deadlock victim (SQLSTATE 40P01) or a serialization failure
    /// (40001), nothing of it was committed, and the whole transaction runs again, up to
    /// ``conflictAttempts`` times in all, after a short random pause. Lock order is still the caller's job: this
    /// only turns a rare crossing into a slower answer instead of an error.
    ///
    /// - Parameter body: The work; it runs synchronously on the worker thread, and again only after such an abort,
    ///   so it must not act outside the database.
    /// - Returns: What `body` returns.
    /// - Throws: `PostgresError`, `CancellationError` while waiting, or what `body` throws.
    @discardableResult
    public func transaction<T: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) throws -> T
    ) async throws -> T {
        try await perform(retry: .ifFirstStatementLost) { connection in
            var attempt = 1
            while true {
                do {
                    return try connection.transaction(body)
                } catch let error as PostgresError where error.isConflict && attempt < Self.conflictAttempts {
                    attempt += 1
                    usleep(UInt32.random(in: 1_000...(5_000 * UInt32(attempt))))
                }
            }
        }
    }

    /// How many times a transaction runs at most when PostgreSQL keeps aborting it as a deadlock victim or a
    /// serialization failure.
    public static let conflictAttempts = 4

    /// Runs `body` on a pooled connection's worker thread without waiting for it: for callers that resume their
    /// own waiters from the worker thread (batched reads), so no task waits on the pool.
    ///
    /// `body` is never rerun. If it throws, the connection is checked and replaced when broken, as after any
    /// body; the error goes nowhere else (`body` has delivered it). `ifNotRun` is called instead of `body`, on
    /// some thread, when `body` never got a connection: `.poolClosed`, `.poolExhausted`, `.poolTimeout`, or
    /// `.connectionFailed`.
    ///
    /// - Parameters:
    ///   - body: The work.
    ///   - ifNotRun: Called with the error when `body` did not run.
    public func submit(
        _ body: @escaping @Sendable (PostgresConnection) throws -> Void,
        ifNotRun: @escaping @Sendable (any Error) -> Void
    ) {
        let id = state.withLock { $0.waiters.register() }
        let job = PostgresPoolJob(
            run: { worker in
                var didRun = false
                let result = worker.run(retry: .never) { connection in
                    didRun = true
                    try body(connection)
                }
                if case .failure(let error) = result, !didRun {
                    ifNotRun(error)
                }
            },
            fail: ifNotRun
        )
        submit(job, id: id)
    }

    /// Fails every waiter with `.poolClosed`, refuses new calls, and asks each worker to close its connection
    /// and end its thread once its current body returns. Does not wait for that. Calling it again does nothing.
    public func shutdown() {
        let waiters: [PostgresPoolJob]? = state.withLock { state in
            guard !state.isShutDown else { return nil }
            state.isShutDown = true
            return state.waiters.drain()
        }
        guard let waiters else { return }
        for job in waiters {
            job.fail(PostgresError(.poolClosed, detail: "the pool was shut down"))
        }
        for worker in workers {
            worker.stop()
        }
    }

    private func perform<T: Sendable>(
        retry: PostgresPoolRetry,
        _ body: @escaping @Sendable (PostgresConnection) throws -> T
    ) async throws -> T {
        let id = state.withLock { $0.waiters.register() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                let job = PostgresPoolJob(
                    run: { worker in
                        let result = worker.run(retry: retry, body)
                        // On the worker's thread, between jobs: the caller's task may go on here at once.
                        InlineTaskExecutor.runsResumedTasksHere { continuation.resume(with: result) }
                    },
                    fail: { error in continuation.resume(throwing: error) }
                )
                submit(job, id: id)
            }
        } onCancel: {
            cancel(id)
        }
    }

    private enum Decision {
        case run(PostgresPoolWorker)
        case fail(any Error)
        case wait(WaiterQueue<PostgresPoolJob>.Timer?)
    }

    /// Lends a worker to `job`, queues it, or fails it.
    private func submit(_ job: PostgresPoolJob, id: UInt64) {
        let decision: Decision = state.withLock { state in
            guard state.waiters.admit(id) else {
                return .fail(CancellationError())
            }
            if state.isShutDown {
                return .fail(PostgresError(.poolClosed, detail: "the pool was shut down"))
            }
            if let worker = state.idle.popLast() {
                state.inUse += 1
                return .run(worker)
            }
            switch state.waiters.enqueue(id, job, deadline: ContinuousClock.now + configuration.acquireTimeout) {
            case .queued(let timer):
                return .wait(timer)
            case .cancelled:
                return .fail(CancellationError())
            case .full:
                return .fail(PostgresError(.poolExhausted, detail: "\(state.waiters.count) callers already wait"))
            }
        }
        switch decision {
        case .run(let worker): worker.submit(job)
        case .fail(let error): job.fail(error)
        case .wait(let timer): if let timer { arm(timer) }
        }
    }

    /// Sets `timer`, which fails the callers that waited `acquireTimeout` with `.poolTimeout`.
    private func arm(_ timer: WaiterQueue<PostgresPoolJob>.Timer) {
        timer.schedule { [weak self] in self?.timeOut(timer) }
    }

    private func timeOut(_ timer: WaiterQueue<PostgresPoolJob>.Timer) {
        let (expired, next) = state.withLock { $0.waiters.expire(now: ContinuousClock.now, timer: timer) }
        if let next { arm(next) }
        let seconds = configuration.acquireTimeout.postgresSeconds
        for job in expired {
            job.fail(PostgresError(.poolTimeout, detail: "no connection became free within \(seconds) s"))
        }
    }

    private func cancel(_ id: UInt64) {
        let job = state.withLock { $0.waiters.cancel(id) }
        job?.fail(CancellationError())
    }

    /// Called by a worker after each job: the next waiter's job, or `nil` after marking the worker idle.
    ///
    /// - Parameter worker: The worker that finished.
    /// - Returns: The job it should run next.
    func next(after worker: PostgresPoolWorker) -> PostgresPoolJob? {
        state.withLock { state in
            if !state.isShutDown, let job = state.waiters.takeFirst() {
                return job
            }
            state.inUse -= 1
            state.idle.append(worker)
            return nil
        }
    }

    /// Counts a connection a worker opened.
    func connectionOpened() {
        state.withLock { $0.open += 1 }
    }

    /// Counts a connection a worker closed.
    func connectionClosed() {
        state.withLock { $0.open -= 1 }
    }
}
