extension PostgresPool {
    /// How a pool connects and how many callers it serves at once. Every setting has a documented default
    /// except the connection string.
    public struct Configuration: Sendable, CustomStringConvertible {
        /// A libpq URI or `key=value` string, passed to libpq as is. It may hold a password, so it is left
        /// out of `description`.
        public var connectionString: String
        /// The number of connections, and of worker threads (one each). At least 1. Default 10.
        public var size: Int
        /// How many callers may wait for a connection at once; more are refused with `.poolExhausted`.
        /// Default 1000.
        public var maxWaiters: Int
        /// How long a caller waits for a free connection before `.poolTimeout`. Default 5 seconds.
        public var acquireTimeout: Duration
        /// `statement_timeout` for every connection; `nil` keeps the server's. Default 10 seconds.
        public var statementTimeout: Duration?
        /// How much longer than `statementTimeout` a statement's caller waits before the connection gives up by
        /// itself (see `PostgresConnection.Options`), so that no caller waits on the database longer than that
        /// and the worker is free again. Default 500 ms.
        public var deadlineMargin: Duration
        /// libpq's `connect_timeout` when the connection string sets none (whole seconds, at least 2 in effect).
        /// Default 5 seconds.
        public var connectTimeout: Duration
        /// `application_name` for every connection; `nil` keeps the connection string's. Default `nil`.
        public var applicationName: String?
        /// TCP keepalives and `tcp_user_timeout`, unless the connection string sets them. Default on.
        public var keepalives: PostgresConnection.Keepalives
        /// Whether statements are prepared by name. Default ``PostgresPreparedStatements/automatic``.
        public var preparedStatements: PostgresPreparedStatements
        /// Called once, with the evidence (no SQL, no values), when an automatic pool finds a pooler in
        /// transaction mode and stops preparing statements; on the worker thread that found it. Default `nil`.
        public var onTransactionPoolerDetected: (@Sendable (String) -> Void)?
        /// Whether an idle connection's socket is checked before reuse (see
        /// `PostgresConnection.isAliveWhileIdle()`). Only tests turn it off, to reach the retry path.
        var checksIdleConnections = true

        /// Creates a configuration.
        ///
        /// - Parameters:
        ///   - connectionString: A libpq URI or `key=value` string.
        ///   - size: The number of connections and worker threads.
        ///   - maxWaiters: The longest wait queue.
        ///   - acquireTimeout: The longest wait for a connection.
        ///   - statementTimeout: The session `statement_timeout`, or `nil`.
        ///   - connectTimeout: The longest wait while connecting.
        ///   - applicationName: The session `application_name`, or `nil`.
        ///   - preparedStatements: Whether statements are prepared by name.
        public init(
            connectionString: String,
            size: Int = 10,
            maxWaiters: Int = 1000,
            acquireTimeout: Duration = .seconds(5),
            statementTimeout: Duration? = .seconds(10),
            connectTimeout: Duration = .seconds(5),
            applicationName: String? = nil,
            preparedStatements: PostgresPreparedStatements = .automatic
        ) {
            self.connectionString = connectionString
            self.size = size
            self.maxWaiters = maxWaiters
            self.acquireTimeout = acquireTimeout
            self.statementTimeout = statementTimeout
            self.deadlineMargin = .milliseconds(500)
            self.connectTimeout = connectTimeout
            self.applicationName = applicationName
            self.keepalives = PostgresConnection.Keepalives()
            self.preparedStatements = preparedStatements
        }

        /// The options of each connection.
        public var connectionOptions: PostgresConnection.Options {
            PostgresConnection.Options(
                connectTimeout: connectTimeout, statementTimeout: statementTimeout, deadlineMargin: deadlineMargin,
                applicationName: applicationName, keepalives: keepalives, preparedStatements: preparedStatements)
        }

        /// The settings without the connection string.
        public var description: String {
            "PostgresPool.Configuration(size: \(size), maxWaiters: \(maxWaiters), acquireTimeout: \(acquireTimeout), "
                + "statementTimeout: \(statementTimeout.map { "\($0)" } ?? "server default"), "
                + "deadlineMargin: \(deadlineMargin), connectTimeout: \(connectTimeout), "
                + "applicationName: \(applicationName ?? "default"), preparedStatements: \(preparedStatements))"
        }
    }

    /// A snapshot of the pool's use, for metrics.
    public struct Statistics: Sendable, Equatable {
        /// The configured number of connections.
        public var size: Int
        /// Connections currently open (they open lazily and reopen after failures).
        public var open: Int
        /// Connections currently lent to a caller.
        public var inUse: Int
        /// Callers waiting for a connection.
        public var waiting: Int
    }
}
