internal import CLibPQ
import Foundation

extension PostgresConnection {
    /// What one round trip sends.
    enum Dispatch {
        /// `PQsendQuery`: SQL text that may hold several statements, without parameters (simple protocol).
        case simple(String)
        /// `PQsendQueryParams`: one statement as the unnamed statement, with text parameters.
        case unnamed(String, [String?])
        /// `PQsendPrepare`: parses the SQL under the name, for the given number of parameters.
        case prepare(String, String, Int)
        /// `PQsendQueryPrepared`: runs the named statement with text parameters.
        case prepared(String, [String?])

        /// Whether it goes through the extended protocol (Parse, Bind, Execute), where the server checks
        /// statement names and parameter counts before running anything.
        var isExtended: Bool {
            if case .simple = self { return false }
            return true
        }

        /// The parameters, if any.
        var binds: [String?] {
            switch self {
            case .simple, .prepare: []
            case .unnamed(_, let binds), .prepared(_, let binds): binds
            }
        }
    }

    /// When a round trip gives up, and how.
    struct Deadline {
        /// The instant past which the client stops waiting.
        let instant: ContinuousClock.Instant
        /// Whether giving up may ask the server to cancel the statement (``giveUp(_:)``).
        let mayCancel: Bool
    }

    /// Sends one round trip, waits for its answer within ``callTimeout`` and checks it.
    ///
    /// The wait is `poll()` on the connection's non-blocking socket with the time left; past it the connection
    /// is closed and `.timedOut` thrown. A statement that cannot commit (one inside a transaction block, other
    /// than its `COMMIT`) is also cancelled in the background; one that may commit is not (``giveUp(_:)``
    /// says why). The result is the last one
    /// the server sent, or the first error (as `PQexec` returns them). SQLSTATE 08P01, 26000 and 42P05 mark the
    /// connection for discarding; from the extended protocol they also mark the error
    /// ``PostgresError/statementDidNotRun``.
    ///
    /// - Parameters:
    ///   - dispatch: What to send.
    ///   - secrets: Values to scrub from any message (parameters, the password).
    ///   - counted: False when the statement was already counted (its `PQprepare`) for the pool's retry rule.
    ///   - commits: True for the `COMMIT` of a transaction block.
    /// - Returns: The result.
    /// - Throws: `PostgresError`: `.queryFailed` with `sqlState`, `.connectionLost`, `.timedOut`.
    @discardableResult
    func run(_ dispatch: Dispatch, secrets: [String], counted: Bool = true, commits: Bool = false) throws
        -> PostgresResult
    {
        guard let handle else {
            throw PostgresError(.connectionLost, detail: "the connection is closed")
        }
        let binds = dispatch.binds
        if binds.count > Int(UInt16.max) {
            throw PostgresError(.queryFailed, detail: "too many parameters: \(binds.count)")
        }
        if let position = binds.firstIndex(where: { $0?.utf8.contains(0) == true }) {
            throw PostgresError(.queryFailed, sqlState: "22021", detail: "parameter $\(position + 1) contains NUL")
        }
        if counted { statementCount += 1 }
        // Outside a transaction block every statement is its own transaction, and commits when it ends.
        let mayCommit = commits || PQtransactionStatus(handle) == PQTRANS_IDLE
        let deadline = callTimeout.map { Deadline(instant: ContinuousClock.now + $0, mayCancel: !mayCommit) }
        let sent: Int32 =
            switch dispatch {
            case .simple(let sql):
                PQsendQuery(handle, sql)
            case .unnamed(let sql, let binds):
                binds.withCStringArray { values in
                    PQsendQueryParams(handle, sql, Int32(values.count), nil, values, nil, nil, 0)
                }
            case .prepare(let name, let sql, let count):
                PQsendPrepare(handle, name, sql, Int32(count), nil)
            case .prepared(let name, let binds):
                binds.withCStringArray { values in
                    PQsendQueryPrepared(handle, name, Int32(values.count), values, nil, nil, 0)
                }
            }
        guard sent == 1 else {
            let lost = PQstatus(handle) != CONNECTION_OK
            throw PostgresError(lost ? .connectionLost : .queryFailed, detail: errorMessage(scrubbing: secrets))
        }
        try flush(handle, until: deadline)
        var kept: PostgresResult?
        while true {
            try awaitResult(handle, until: deadline)
            guard let raw = PQgetResult(handle) else { break }
            let result = PostgresResult(raw)
            switch result.status {
            case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
                close()  // The simplest way out of COPY mode; the next pool use reconnects.
                throw PostgresError(.queryFailed, detail: "COPY is not supported")
            default:
                if kept.map(Self.isSuccess) ?? true { kept = result }  // The last result, or the first error.
            }
        }
        guard let result = kept else {
            let lost = PQstatus(handle) != CONNECTION_OK
            throw PostgresError(lost ? .connectionLost : .queryFailed, detail: errorMessage(scrubbing: secrets))
        }
        guard Self.isSuccess(result) else {
            let lost = PQstatus(handle) != CONNECTION_OK || serverEndedSession
            var error = result.error(lost ? .connectionLost : .queryFailed, scrubbing: secrets)
            if let state = error.sqlState, PostgresError.discardingStates.contains(state) {
                mustBeDiscarded = true
                error.statementDidNotRun = dispatch.isExtended
            }
            throw error
        }
        return result
    }

    /// One round trip that runs nothing: a Sync message alone, which the server answers with ReadyForQuery.
    ///
    /// The server reads it, reports itself idle (handing out, first, the notifications it was signalled about:
    /// docs/caching.md) and answers. No parse, no plan, no transaction, no result rows: it costs the server less
    /// than half of `SELECT 1`. libpq sends a Sync alone only in pipeline mode, so the connection enters it for
    /// the round trip and leaves it after; the wait is bounded by ``callTimeout`` as for any statement.
    ///
    /// - Throws: `PostgresError`: `.connectionLost`, `.timedOut`, or `.queryFailed` if the server answers with
    ///   anything but the end of the pipeline.
    public func synchronize() throws {
        guard let handle else {
            throw PostgresError(.connectionLost, detail: "the connection is closed")
        }
        let deadline = callTimeout.map { Deadline(instant: ContinuousClock.now + $0, mayCancel: true) }
        guard PQenterPipelineMode(handle) == 1, PQpipelineSync(handle) == 1 else {
            let lost = PQstatus(handle) != CONNECTION_OK
            throw PostgresError(lost ? .connectionLost : .queryFailed, detail: errorMessage(scrubbing: []))
        }
        try flush(handle, until: deadline)
        while true {
            try awaitResult(handle, until: deadline)
            guard let raw = PQgetResult(handle) else {
                // Between a pipeline's results: wait for more input rather than spin.
                _ = try wait(handle, for: Int16(POLLIN), until: deadline)
                guard PQconsumeInput(handle) != 0 else {
                    throw PostgresError(.connectionLost, detail: errorMessage(scrubbing: []))
                }
                continue
            }
            let result = PostgresResult(raw)
            if result.status == PGRES_PIPELINE_SYNC { break }
            // An error here is the server ending the session (FATAL: terminated, shutting down), or a broken pipe.
            mustBeDiscarded = true
            let severity = result.errorField(DiagnosticField.severityNonlocalized)
            let lost = PQstatus(handle) != CONNECTION_OK || severity == "FATAL" || severity == "PANIC"
            throw result.error(lost ? .connectionLost : .queryFailed, scrubbing: [])
        }
        guard PQexitPipelineMode(handle) == 1 else {
            mustBeDiscarded = true
            throw PostgresError(.queryFailed, detail: errorMessage(scrubbing: []))
        }
    }

    private static func isSuccess(_ result: PostgresResult) -> Bool {
        switch result.status {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY: true
        default: false
        }
    }

    /// Sends what libpq buffered (`PQflush`), waiting for the socket to take it; input that arrives meanwhile is
    /// read so the server is never blocked on its own output.
    private func flush(_ handle: OpaquePointer, until deadline: Deadline?) throws {
        while true {
            let flushed = PQflush(handle)
            if flushed == 0 { return }
            guard flushed > 0 else {
                throw PostgresError(.connectionLost, detail: errorMessage(scrubbing: []))
            }
            let events = try wait(handle, for: Int16(POLLOUT | POLLIN), until: deadline)
            if events & Int16(POLLIN) != 0, PQconsumeInput(handle) == 0 {
                throw PostgresError(.connectionLost, detail: errorMessage(scrubbing: []))
            }
        }
    }

    /// Reads input until libpq holds a whole result (or the end of the results): `PQisBusy` is false.
    private func awaitResult(_ handle: OpaquePointer, until deadline: Deadline?) throws {
        while PQisBusy(handle) != 0 {
            _ = try wait(handle, for: Int16(POLLIN), until: deadline)
            guard PQconsumeInput(handle) != 0 else {
                throw PostgresError(.connectionLost, detail: errorMessage(scrubbing: []))
            }
        }
    }

    /// Blocks in `poll()` on the socket until one of `events` (or an error or hang-up) or the deadline.
    ///
    /// - Returns: The events seen.
    /// - Throws: `.timedOut` (after closing, see ``giveUp(_:)``) past the deadline;
    ///   `.connectionLost` when the socket is gone.
    private func wait(_ handle: OpaquePointer, for events: Int16, until deadline: Deadline?) throws
        -> Int16
    {
        let socket = PQsocket(handle)
        guard socket >= 0 else {
            throw PostgresError(.connectionLost, detail: "the connection has no socket")
        }
        while true {
            var milliseconds: Int32 = -1
            if let deadline {
                let left = ContinuousClock.now.duration(to: deadline.instant)
                guard left > .zero else { throw giveUp(deadline) }
                milliseconds = Int32(clamping: max(1, left.postgresMilliseconds))
            }
            var descriptor = pollfd(fd: socket, events: events, revents: 0)
            let ready = poll(&descriptor, 1, milliseconds)
            if ready > 0 { return descriptor.revents }
            if ready < 0, errno != EINTR {
                throw PostgresError(.connectionLost, detail: "poll failed: \(String(cString: strerror(errno)))")
            }
        }
    }

    /// The deadline passed: closes the connection and returns the error to throw. A statement that cannot commit
    /// is also cancelled (in the background: `PQcancel` itself waits for the server), so that the server stops
    /// working for nobody.
    ///
    /// A statement that may commit is never cancelled. With a synchronous standby, a commit waits for the
    /// standby's acknowledgement after it is written locally, and a cancel request ends that wait: the commit
    /// becomes visible at once (PostgreSQL only warns that it "might not have been replicated"), although this
    /// client gave up on it and a failover can take it back. Closing the connection does not end the wait: the
    /// commit stays invisible until the standby has it (docs/high-availability.md, "Nothing given up on is
    /// shown"). The server ends such a statement by itself, at its `statement_timeout` or when it next writes
    /// to the closed socket.
    private func giveUp(_ deadline: Deadline) -> PostgresError {
        let timeout = callTimeout ?? .zero
        if deadline.mayCancel, let handle, let cancel = PQgetCancel(handle) {
            PostgresCanceller.shared.submit(PostgresCanceller.Request(cancel))
        }
        close()
        return PostgresError(.timedOut, detail: "no answer from the server within \(timeout)")
    }
}
