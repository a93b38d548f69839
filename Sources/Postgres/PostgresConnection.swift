internal import CLibPQ

/// One synchronous PostgreSQL connection over libpq.
///
/// Every call blocks the calling thread until the server answers, so call it from a thread that may block
/// (`PostgresPool` runs it on its own worker threads), never from Swift's cooperative thread pool.
/// Parameterized statements are prepared once per connection (`PQprepare`, see `PostgresStatementCache`) and run
/// with `PQexecPrepared` in text format; values only ever travel as parameters.
///
/// Ownership: owns exactly one `PGconn`, freed by `PQfinish` in `close()` (idempotent) or in `deinit`.
/// Thread safety: not thread-safe. Use it from one thread at a time; it may move between threads between calls.
public final class PostgresConnection {
    /// The `PGconn*`; `nil` once closed.
    private(set) var handle: OpaquePointer?
    /// The connection password, scrubbed from every message.
    private let password: String?
    /// Statements attempted on this connection, successful or not; the pool's retry rule reads it.
    private(set) var statementCount = 0
    /// Set when the server sent a FATAL or PANIC message: the session is over even if the socket is not yet.
    private var serverEndedSession = false
    /// The statements prepared on this connection; empty again after a reconnect (a new connection).
    private var statements = PostgresStatementCache()

    /// The number of statements prepared on this connection (tests).
    public var preparedStatementCount: Int { statements.count }

    /// Opens a connection and prepares its session.
    ///
    /// The session gets `TimeZone` UTC, `DateStyle` ISO, `bytea_output` hex and `client_encoding` UTF8, so
    /// decoding does not depend on server settings, plus `statement_timeout` when given.
    ///
    /// - Parameters:
    ///   - connectionString: A libpq URI (`postgresql://user:pw@host:5432/db?sslmode=…`) or a
    ///     `key=value` string, used as is (`PQconnectdbParams` with `expand_dbname`).
    ///   - connectTimeout: The most time spent connecting to each host address; libpq counts whole
    ///     seconds, rounded up, and at least 2.
    ///   - statementTimeout: The session's `statement_timeout`; `nil` keeps the server's setting.
    ///   - applicationName: The `application_name` shown in `pg_stat_activity`; `nil` keeps the connection
    ///     string's or libpq's default.
    /// - Throws: `PostgresError` with code `.connectionFailed`; its `debugDescription` carries libpq's message
    ///   without the password.
    public init(
        connectionString: String,
        connectTimeout: Duration = .seconds(5),
        statementTimeout: Duration? = .seconds(10),
        applicationName: String? = nil
    ) throws {
        let parsed = Self.parse(connectionString)
        self.password = parsed.password
        self.handle = try Self.connect(
            connectionString,
            parsed: parsed,
            connectTimeout: connectTimeout,
            applicationName: applicationName
        )
        if let handle {
            PQsetNoticeReceiver(handle, postgresNoticeReceiverThunk, Unmanaged.passUnretained(self).toOpaque())
        }
        var setup = "SET TimeZone TO 'UTC'; SET DateStyle TO 'ISO, MDY'; SET bytea_output TO 'hex'"
        if let statementTimeout {
            setup += "; SET statement_timeout TO \(statementTimeout.postgresMilliseconds)"
        }
        do {
            try simpleQuery(unsafeSQL: setup)
        } catch let error as PostgresError {
            close()
            throw PostgresError(.connectionFailed, sqlState: error.sqlState, detail: error.detail)
        }
    }

    deinit {
        if let handle {
            PQfinish(handle)
        }
    }

    /// Closes the connection (`PQfinish`). Calling it again does nothing; later statements throw.
    public func close() {
        if let handle {
            PQfinish(handle)
            self.handle = nil
        }
    }

    /// True while the connection is open and libpq reports `CONNECTION_OK`. After a lost connection it is
    /// false; a pool then discards the connection and opens a new one.
    public var isUsable: Bool {
        guard let handle, !serverEndedSession else { return false }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// Runs one statement and returns its rows.
    ///
    /// - Parameter query: The statement and its parameters.
    /// - Returns: The rows (empty for commands without rows) and the affected-row count.
    /// - Throws: `PostgresError`: `.queryFailed` with `sqlState` for server errors, `.connectionLost` if the
    ///   connection broke.
    public func query(_ query: PostgresQuery) throws -> PostgresRows {
        try runPrepared(query.sql, binds: query.binds)
    }

    /// Runs one statement and returns the number of rows it affected.
    ///
    /// - Parameter query: The statement and its parameters.
    /// - Returns: The affected-row count (`PQcmdTuples`).
    /// - Throws: `PostgresError`, as for `query(_:)`.
    @discardableResult
    public func execute(_ query: PostgresQuery) throws -> Int {
        try self.query(query).affectedRows
    }

    /// Runs SQL text that may hold several statements separated by semicolons (`PQexec`), as migrations need.
    /// Without an explicit transaction in the text, the statements run in one implicit transaction.
    ///
    /// - Parameter unsafeSQL: SQL text that must not contain untrusted input.
    /// - Returns: The rows of the last statement.
    /// - Throws: `PostgresError`, as for `query(_:)`; execution stops at the first failing statement.
    @discardableResult
    public func simpleQuery(unsafeSQL: String) throws -> PostgresRows {
        try run(unsafeSQL, binds: nil).rows()
    }

    /// Runs `body` inside `BEGIN` … `COMMIT`, or `ROLLBACK` if `body` throws.
    ///
    /// If a statement failed inside `body` and `body` swallowed the error, the server turns `COMMIT` into a
    /// rollback; this method then throws instead of pretending the work was saved.
    ///
    /// - Parameter body: The work; it gets this connection.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, or `PostgresError` from `BEGIN`/`COMMIT`, or `.queryFailed` with SQLSTATE
    ///   25001 if a transaction is already open on this connection.
    @discardableResult
    public func transaction<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        if let handle, PQtransactionStatus(handle) != PQTRANS_IDLE {
            throw PostgresError(.queryFailed, sqlState: "25001", detail: "a transaction is already open")
        }
        try run("BEGIN", binds: nil)
        let value: T
        do {
            value = try body(self)
        } catch {
            if isUsable {
                _ = try? run("ROLLBACK", binds: nil)
            }
            throw error
        }
        let commit = try run("COMMIT", binds: nil)
        if commit.commandStatus == "ROLLBACK" {
            throw PostgresError(.queryFailed, sqlState: "25P02", detail: "COMMIT rolled back a failed transaction")
        }
        return value
    }

    /// Runs a parameterized statement through the statement cache: prepares it on first use on this
    /// connection, then executes the prepared statement. Falls back to `PQexecParams` when the cache is full.
    private func runPrepared(_ sql: String, binds: [String?]) throws -> PostgresRows {
        if let entry = statements.entry(for: sql) {
            let result: PostgresResult
            do {
                result = try run(sql, binds: binds, prepared: entry.name)
            } catch let error as PostgresError where error.sqlState == "26000" || error.sqlState == "0A000" {
                // 26000: the server no longer has the statement (DISCARD ALL); 0A000: a table changed under a
                // cached plan so that its result type changed. Forget it; the next call prepares it again.
                statements.remove(sql)
                if error.sqlState == "0A000", let handle, PQtransactionStatus(handle) == PQTRANS_IDLE {
                    _ = try? run("DEALLOCATE \(entry.name)", binds: nil)
                }
                throw error
            }
            let rows = try result.rows(columns: entry.columns)
            if entry.columns == nil { entry.columns = rows.storage.table }
            return rows
        }
        guard let name = statements.reserve() else {
            return try run(sql, binds: binds).rows()
        }
        try prepare(sql, name: name, parameterCount: binds.count)
        let entry = statements.insert(sql, name: name)
        let rows = try run(sql, binds: binds, prepared: name, counted: false).rows()
        entry.columns = rows.storage.table
        return rows
    }

    /// `PQprepare`: parses `sql` on the server under `name`. Counts as the statement for the pool's retry rule.
    private func prepare(_ sql: String, name: String, parameterCount: Int) throws {
        guard let handle else {
            throw PostgresError(.connectionLost, detail: "the connection is closed")
        }
        statementCount += 1
        let secrets = password.map { [$0] } ?? []
        guard let raw = PQprepare(handle, name, sql, Int32(parameterCount), nil) else {
            let lost = PQstatus(handle) != CONNECTION_OK
            throw PostgresError(lost ? .connectionLost : .queryFailed, detail: errorMessage(scrubbing: secrets))
        }
        let result = PostgresResult(raw)
        guard result.status == PGRES_COMMAND_OK else {
            let lost = PQstatus(handle) != CONNECTION_OK || serverEndedSession
            throw result.error(lost ? .connectionLost : .queryFailed, scrubbing: secrets)
        }
    }

    /// Sends `sql` with `PQexecParams` (or `PQexec` when `binds` is `nil`, or `PQexecPrepared` when `prepared`
    /// names a statement prepared from `sql`) and checks the result. `counted: false` when `prepare` already
    /// counted this statement.
    @discardableResult
    private func run(_ sql: String, binds: [String?]?, prepared: String? = nil, counted: Bool = true) throws
        -> PostgresResult
    {
        guard let handle else {
            throw PostgresError(.connectionLost, detail: "the connection is closed")
        }
        let secrets = (binds ?? []).compactMap { $0 } + (password.map { [$0] } ?? [])
        if let binds {
            if binds.count > Int(UInt16.max) {
                throw PostgresError(.queryFailed, detail: "too many parameters: \(binds.count)")
            }
            if let position = binds.firstIndex(where: { $0?.utf8.contains(0) == true }) {
                throw PostgresError(.queryFailed, sqlState: "22021", detail: "parameter $\(position + 1) contains NUL")
            }
        }
        if counted { statementCount += 1 }
        let raw: OpaquePointer? =
            if let binds, let prepared {
                binds.withCStringArray { values in
                    PQexecPrepared(handle, prepared, Int32(values.count), values, nil, nil, 0)
                }
            } else if let binds {
                binds.withCStringArray { values in
                    PQexecParams(handle, sql, Int32(values.count), nil, values, nil, nil, 0)
                }
            } else {
                PQexec(handle, sql)
            }
        guard let raw else {
            let lost = PQstatus(handle) != CONNECTION_OK
            throw PostgresError(lost ? .connectionLost : .queryFailed, detail: errorMessage(scrubbing: secrets))
        }
        let result = PostgresResult(raw)
        switch result.status {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return result
        case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
            close()  // The simplest way out of COPY mode; the next pool use reconnects.
            throw PostgresError(.queryFailed, detail: "COPY is not supported")
        default:
            let lost = PQstatus(handle) != CONNECTION_OK || serverEndedSession
            throw result.error(lost ? .connectionLost : .queryFailed, scrubbing: secrets)
        }
    }

    /// `PQerrorMessage` with `secrets` scrubbed.
    private func errorMessage(scrubbing secrets: [String]) -> String {
        guard let handle, let message = PQerrorMessage(handle) else { return "no message" }
        return PostgresError.scrub(String(cString: message), removing: secrets)
    }

    /// Records a notice's severity; FATAL and PANIC mean the server is ending the session.
    ///
    /// - Parameter severity: The non-localized severity (`PG_DIAG_SEVERITY_NONLOCALIZED`).
    func noticeReceived(severity: String?) {
        if severity == "FATAL" || severity == "PANIC" {
            serverEndedSession = true
        }
    }
}
