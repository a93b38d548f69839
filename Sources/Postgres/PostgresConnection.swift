internal import CLibPQ

/// One synchronous PostgreSQL connection over libpq.
///
/// Every call blocks the calling thread until the server answers or the call's deadline passes, so call it from a
/// thread that may block (`PostgresPool` runs it on its own worker threads), never from Swift's cooperative thread
/// pool. Statements go out through libpq's asynchronous API on a non-blocking socket and the thread waits in
/// `poll()` for at most ``Options/callTimeout`` (`statement_timeout` plus a margin): past it the connection is
/// closed (a statement that cannot commit is also cancelled in the background, ``PostgresCanceller``), and
/// `.timedOut` thrown, so a frozen or vanished server never holds a thread longer than that. Parameterized
/// statements are prepared once per connection under a name derived from their text (`PQsendPrepare`, see
/// `PostgresStatementCache`) and run with `PQsendQueryPrepared` in text format, or sent as the unnamed statement
/// (`PQsendQueryParams`) when ``PostgresPreparedStatements`` says so; values only ever travel as parameters.
///
/// Session state: the session gets `TimeZone` UTC, `DateStyle` ISO and `client_encoding` UTF8, which PgBouncer
/// tracks and restores for each client even in transaction mode; when the connection may have a server session of
/// its own (prepared statements in use) also `bytea_output` hex and `statement_timeout`. Otherwise (behind a
/// transaction-mode pooler) a transaction sets `statement_timeout` with `SET LOCAL`, bytea is decoded in either
/// output form, and the client's own deadline bounds every call.
///
/// Ownership: owns exactly one `PGconn`, freed by `PQfinish` in `close()` (idempotent) or in `deinit`.
/// Thread safety: not thread-safe. Use it from one thread at a time; it may move between threads between calls.
public final class PostgresConnection {
    /// The `PGconn*`; `nil` once closed.
    private(set) var handle: OpaquePointer?
    /// The connection password, scrubbed from every message.
    let password: String?
    /// The settings the connection was made with.
    let options: Options
    /// The prepared-statement choice, shared with the pool's other connections.
    let policy: PostgresStatementPolicy
    /// Whether the session's setup assumed a server session of its own (see the type's doc comment).
    let ownsSession: Bool
    /// The longest wait for one statement's answer; `nil` waits as long as it takes. The listener shortens it
    /// for its pings.
    var callTimeout: Duration?
    /// Statements attempted on this connection, successful or not; the pool's retry rule reads it.
    var statementCount = 0
    /// Set when the server sent a FATAL or PANIC message: the session is over even if the socket is not yet.
    var serverEndedSession = false
    /// Set when the server session may not be what this client believes (SQLSTATE 08P01, 26000, 42P05): the
    /// connection still runs its current caller's statements, and the pool closes it afterwards.
    var mustBeDiscarded = false
    /// The statements prepared on this connection; empty again after a reconnect (a new connection).
    var statements = PostgresStatementCache()

    /// The number of statements prepared on this connection (tests).
    public var preparedStatementCount: Int { statements.count }

    /// Opens a connection and prepares its session.
    ///
    /// - Parameters:
    ///   - connectionString: A libpq URI (`postgresql://user:pw@host:5432/db?sslmode=…`) or a
    ///     `key=value` string, used as is (`PQconnectdbParams` with `expand_dbname`).
    ///   - connectTimeout: The connect timeout when the connection string sets none; libpq counts whole
    ///     seconds, rounded up, and at least 2.
    ///   - statementTimeout: The session's `statement_timeout`; `nil` keeps the server's (and sets no deadline).
    ///   - applicationName: The `application_name` shown in `pg_stat_activity`; `nil` keeps the connection
    ///     string's or libpq's default.
    /// - Throws: `PostgresError` with code `.connectionFailed`; its `debugDescription` carries libpq's message
    ///   without the password.
    public convenience init(
        connectionString: String,
        connectTimeout: Duration = .seconds(5),
        statementTimeout: Duration? = .seconds(10),
        applicationName: String? = nil
    ) throws {
        try self.init(
            connectionString: connectionString,
            options: Options(
                connectTimeout: connectTimeout, statementTimeout: statementTimeout, applicationName: applicationName))
    }

    /// Opens a connection with `options` and prepares its session.
    ///
    /// - Parameters:
    ///   - connectionString: A libpq URI or `key=value` string, used as is.
    ///   - options: How to connect, wait and send statements.
    /// - Throws: `PostgresError` with code `.connectionFailed` (or `.timedOut` when the session setup got no
    ///   answer in time); its `debugDescription` carries libpq's message without the password.
    public convenience init(connectionString: String, options: Options) throws {
        try self.init(
            connectionString: connectionString, options: options,
            policy: PostgresStatementPolicy(mode: options.preparedStatements))
    }

    /// Opens a connection that shares `policy` with other connections (a pool's).
    init(connectionString: String, options: Options, policy: PostgresStatementPolicy) throws {
        let parsed = Self.parse(connectionString)
        self.password = parsed.password
        self.options = options
        self.policy = policy
        self.ownsSession = policy.prepares
        self.callTimeout = options.callTimeout
        self.handle = try Self.connect(connectionString, parsed: parsed, options: options)
        if let handle {
            PQsetNoticeReceiver(handle, postgresNoticeReceiverThunk, Unmanaged.passUnretained(self).toOpaque())
        }
        var setup = "SET TimeZone TO 'UTC'; SET DateStyle TO 'ISO, MDY'"
        if ownsSession {
            setup += "; SET bytea_output TO 'hex'"
            if let statementTimeout = options.statementTimeout {
                setup += "; SET statement_timeout TO \(statementTimeout.postgresMilliseconds)"
            }
        }
        do {
            try simpleQuery(unsafeSQL: setup)
        } catch let error as PostgresError {
            close()
            throw PostgresError(
                error.code == .timedOut ? .timedOut : .connectionFailed, sqlState: error.sqlState, detail: error.detail)
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

    /// True while the connection is open, libpq reports `CONNECTION_OK` and nothing has put its server session in
    /// doubt. After a lost connection it is false; a pool then discards the connection and opens a new one.
    public var isUsable: Bool {
        guard let handle, !serverEndedSession, !mustBeDiscarded else { return false }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// The server's version as a number (`PQserverVersion`: 150004 for 15.4), or 0 when the connection is closed.
    public var serverVersion: Int {
        handle.map { Int(PQserverVersion($0)) } ?? 0
    }

    /// Runs one statement and returns its rows.
    ///
    /// - Parameter query: The statement and its parameters.
    /// - Returns: The rows (empty for commands without rows) and the affected-row count.
    /// - Throws: `PostgresError`: `.queryFailed` with `sqlState` for server errors, `.connectionLost` if the
    ///   connection broke, `.timedOut` past ``Options/callTimeout``.
    public func query(_ query: PostgresQuery) throws -> PostgresRows {
        try runStatement(query.sql, binds: query.binds)
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
        try run(.simple(unsafeSQL), secrets: []).rows()
    }

    /// Runs `body` inside `BEGIN` … `COMMIT`, or `ROLLBACK` if `body` throws.
    ///
    /// If a statement failed inside `body` and `body` swallowed the error, the server turns `COMMIT` into a
    /// rollback; this method then throws instead of pretending the work was saved. On a connection without a
    /// server session of its own, `BEGIN` also sets `statement_timeout` for the transaction (`SET LOCAL`).
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
        var begin = "BEGIN"
        if !ownsSession, let statementTimeout = options.statementTimeout {
            begin += "; SET LOCAL statement_timeout TO \(statementTimeout.postgresMilliseconds)"
        }
        try run(.simple(begin), secrets: [])
        let value: T
        do {
            value = try body(self)
        } catch {
            if isUsable || mustBeDiscarded {
                _ = try? run(.simple("ROLLBACK"), secrets: [])
            }
            throw error
        }
        let commit = try run(.simple("COMMIT"), secrets: [], commits: true)
        if commit.commandStatus == "ROLLBACK" {
            throw PostgresError(.queryFailed, sqlState: "25P02", detail: "COMMIT rolled back a failed transaction")
        }
        return value
    }

    /// Inside ``transaction(_:)``: makes its `COMMIT` return only once the commit is durable on the server's
    /// synchronous standby, even if the transaction only read. On a server with no synchronous standby
    /// (`synchronous_standby_names` empty) it does nothing: there is nothing to wait for, and every commit the
    /// transaction saw was flushed to disk before it was visible.
    ///
    /// Every commit that the transaction saw was written to the WAL before this transaction's own commit record,
    /// and a standby flushes the WAL in order: so once that commit is acknowledged, everything the transaction
    /// read is on the standby too, and no failover can take it back. PostgreSQL waits for the standby only at the
    /// commit of a transaction that wrote WAL before its commit record (`RecordTransactionCommit`); a transaction
    /// id alone is not enough (`pg_current_xact_id()` commits at once, measured). So this statement writes one
    /// small WAL record that changes no table, a transactional logical decoding message
    /// (`pg_logical_emit_message(true, 'fbsessions', '')`, which any role may call), and sets
    /// `synchronous_commit` to `on` for the transaction, whatever the role's default. It costs this round trip,
    /// and with a standby one WAL flush and the standby's acknowledgement at the commit (docs/high-availability.md
    /// has the figures).
    ///
    /// - Throws: `PostgresError`, as for any statement; `.queryFailed` with SQLSTATE 25000 outside a transaction.
    public func confirmDurabilityAtCommit() throws {
        if let handle, PQtransactionStatus(handle) != PQTRANS_INTRANS {
            throw PostgresError(.queryFailed, sqlState: "25000", detail: "not inside a transaction")
        }
        let statement = """
            SELECT set_config('synchronous_commit', 'on', true),
                   CASE WHEN current_setting('synchronous_standby_names') <> ''
                        THEN pg_logical_emit_message(true, 'fbsessions', '') END
            """
        try run(.simple(statement), secrets: [])
    }

    /// `PQerrorMessage` with `secrets` scrubbed.
    func errorMessage(scrubbing secrets: [String]) -> String {
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
