import Foundation

/// Work handed to a pool worker: `run` executes on the worker's thread and resumes the caller; `fail`
/// resumes the caller with an error instead when the work never reaches a worker.
struct PostgresPoolJob: Sendable {
    /// Runs the caller's body on the worker thread and resumes the caller with its result.
    let run: @Sendable (PostgresPoolWorker) -> Void
    /// Resumes the caller with an error.
    let fail: @Sendable (any Error) -> Void
}

/// Whether the pool may rerun a body once on a fresh connection after it failed in a way that proves it had no
/// effect.
enum PostgresPoolRetry: Sendable {
    /// Never: the body is the caller's own code and has started.
    case never
    /// When the body's first statement was the one that failed with `.connectionLost` on a connection
    /// reused from an earlier checkout, or when the server refused a statement before running it
    /// (`PostgresError.statementDidNotRun`): for one statement nothing ran, and inside a transaction the
    /// refusal aborted the transaction, so nothing of it was committed. Only for bodies the pool itself writes
    /// (one statement, or a transaction, whose bodies may run again).
    case ifFirstStatementLost
}

/// One pooled connection slot: a dedicated OS thread and the connection only that thread touches.
///
/// Ownership: owns its `PostgresConnection` (opened lazily, replaced after failures, closed when the worker
///   stops) and its `Thread`, which ends after `stop()`.
/// Thread safety: `submit(_:)` and `stop()` may be called from any thread (guarded by `condition`); the
///   connection is used only on the worker's own thread.
/// Sendable: `mailbox` and `isStopping` are guarded by `condition` (an `NSCondition`: the thread sleeps on it until
///   a job comes), the libpq connection is the worker thread's alone, and `pool` is set once before the thread
///   starts; the compiler can see none of that.
final class PostgresPoolWorker: @unchecked Sendable {
    /// The pool, to hand back the worker after each job. Set once before the thread starts.
    weak var pool: PostgresPool?
    private let configuration: PostgresPool.Configuration
    /// The prepared-statement choice, shared with the pool's other workers.
    private let policy: PostgresStatementPolicy
    private let condition = NSCondition()
    /// The next job; guarded by `condition`.
    private var mailbox: PostgresPoolJob?
    /// Set by `stop()`; guarded by `condition`.
    private var isStopping = false
    /// The connection; only touched on the worker thread.
    private var connection: PostgresConnection?

    /// Creates a worker; call `start(name:)` once `pool` is set.
    ///
    /// - Parameters:
    ///   - configuration: How to open connections.
    ///   - policy: The pool's prepared-statement choice.
    init(configuration: PostgresPool.Configuration, policy: PostgresStatementPolicy) {
        self.configuration = configuration
        self.policy = policy
    }

    /// Starts the worker thread.
    ///
    /// - Parameter name: The thread name, for debuggers and `top -H`; at most 15 bytes (Linux's limit: a longer
    ///   one is refused and the thread keeps its creator's name).
    func start(name: String) {
        let thread = Thread { [self] in
            // On Linux a name set before `start()` never reaches the OS thread, and one set inside is lost
            // if the thread runs before `start()` has recorded it; holding `condition` across `start()`
            // and passing through it here orders the two.
            condition.lock()
            condition.unlock()
            Thread.current.name = name
            threadMain()
        }
        condition.lock()
        thread.start()
        condition.unlock()
    }

    /// Gives the idle worker a job.
    ///
    /// - Parameter job: The job.
    func submit(_ job: PostgresPoolJob) {
        condition.lock()
        precondition(mailbox == nil, "PostgresPoolWorker \(ObjectIdentifier(self)) got a job while busy")
        mailbox = job
        condition.signal()
        condition.unlock()
    }

    /// Asks the thread to close its connection and end once its current job, if any, is done.
    func stop() {
        condition.lock()
        isStopping = true
        condition.signal()
        condition.unlock()
    }

    private func threadMain() {
        while let first = waitForJob() {
            var job: PostgresPoolJob? = first
            while let current = job {
                current.run(self)
                if let connection {
                    connection.resetAfterUse()
                    if !connection.isUsable {
                        discardConnection()
                    }
                }
                job = pool?.next(after: self)
            }
        }
        discardConnection()
    }

    private func waitForJob() -> PostgresPoolJob? {
        condition.lock()
        defer { condition.unlock() }
        while mailbox == nil, !isStopping {
            condition.wait()
        }
        let job = mailbox
        mailbox = nil
        return job
    }

    /// Runs `body` with a live connection, applying the pool's reconnect and retry rule. Worker thread only.
    ///
    /// - Parameters:
    ///   - retry: Whether one rerun on a fresh connection is allowed.
    ///   - body: The work.
    /// - Returns: The body's result or the error.
    func run<T>(retry: PostgresPoolRetry, _ body: (PostgresConnection) throws -> T) -> Result<T, any Error> {
        var hasRetried = false
        while true {
            let checkedOut: (connection: PostgresConnection, isReused: Bool)
            do {
                checkedOut = try checkOut()
            } catch {
                return .failure(error)
            }
            let connection = checkedOut.connection
            let statementsBefore = connection.statementCount
            do {
                return .success(try body(connection))
            } catch {
                let didNotRun = (error as? PostgresError)?.statementDidNotRun == true
                guard !connection.isUsable || didNotRun else { return .failure(error) }
                if !connection.isUsable {
                    discardConnection()
                }
                let isLost = (error as? PostgresError)?.code == .connectionLost
                let firstStatementFailed = connection.statementCount - statementsBefore == 1
                let staleConnection = checkedOut.isReused && isLost && firstStatementFailed
                if retry == .ifFirstStatementLost, !hasRetried, staleConnection || didNotRun {
                    hasRetried = true
                    continue
                }
                return .failure(error)
            }
        }
    }

    /// The current connection if it is still alive, else a new one.
    private func checkOut() throws -> (connection: PostgresConnection, isReused: Bool) {
        if let connection {
            if connection.isUsable, !configuration.checksIdleConnections || connection.isAliveWhileIdle() {
                return (connection, true)
            }
            discardConnection()
        }
        let fresh = try PostgresConnection(
            connectionString: configuration.connectionString, options: configuration.connectionOptions,
            policy: policy)
        connection = fresh
        pool?.connectionOpened()
        return (fresh, false)
    }

    private func discardConnection() {
        guard let connection else { return }
        connection.close()
        self.connection = nil
        pool?.connectionClosed()
    }
}
