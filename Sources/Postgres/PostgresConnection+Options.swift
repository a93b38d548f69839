/// Whether parameterized statements are prepared by name on the server (`PQprepare`, then `PQexecPrepared`) or
/// sent as the unnamed statement (`PQexecParams`) every time.
public enum PostgresPreparedStatements: Sendable, Equatable {
    /// Prepared by name, until a connection sees that a pooler in transaction mode shares server sessions
    /// between clients (a statement this connection prepared is gone, or one it never prepared already exists);
    /// from then on, every connection of the same pool behaves as ``never``. The default.
    case automatic
    /// Always prepared by name: connected directly, through a pooler in session mode, or through one that keeps
    /// prepared statements itself (PgBouncer 1.21 or later with `max_prepared_statements`).
    case always
    /// Never: every statement is the unnamed statement, parsed and planned on each call, and the connection relies
    /// on no session state but what a pooler tracks (behind PgBouncer before 1.21 in transaction mode).
    case never
}

extension PostgresConnection {
    /// How a connection connects, how long it waits, and how it sends statements. Every setting has a default.
    public struct Options: Sendable {
        /// libpq's `connect_timeout` when the connection string sets none (whole seconds, rounded up; libpq
        /// treats values below 2 as 2; it applies to each host address in turn). Default 5 seconds.
        public var connectTimeout: Duration
        /// The `statement_timeout` the server enforces; `nil` keeps the server's. Default 10 seconds.
        public var statementTimeout: Duration?
        /// How much longer than `statementTimeout` the client waits for an answer before it gives up by itself:
        /// it then cancels the statement (`PQcancel`, in the background), closes the connection and throws
        /// `.timedOut`. A frozen server never fires its own timeout; this one always does. Default 500 ms.
        public var deadlineMargin: Duration
        /// `application_name`, shown in `pg_stat_activity`; it wins over the connection string's. `nil` keeps
        /// the connection string's or libpq's. Default `nil`.
        public var applicationName: String?
        /// TCP keepalives and `tcp_user_timeout`, used unless the connection string sets them. Default on.
        public var keepalives: Keepalives
        /// Whether statements are prepared by name. Default ``PostgresPreparedStatements/automatic``.
        public var preparedStatements: PostgresPreparedStatements

        /// Creates options.
        ///
        /// - Parameters:
        ///   - connectTimeout: The connect timeout used when the connection string has none.
        ///   - statementTimeout: The server's `statement_timeout`, or `nil`.
        ///   - deadlineMargin: The client's wait beyond `statementTimeout`.
        ///   - applicationName: The session's `application_name`, or `nil`.
        ///   - keepalives: TCP keepalive settings.
        ///   - preparedStatements: Whether statements are prepared by name.
        public init(
            connectTimeout: Duration = .seconds(5),
            statementTimeout: Duration? = .seconds(10),
            deadlineMargin: Duration = .milliseconds(500),
            applicationName: String? = nil,
            keepalives: Keepalives = Keepalives(),
            preparedStatements: PostgresPreparedStatements = .automatic
        ) {
            self.connectTimeout = connectTimeout
            self.statementTimeout = statementTimeout
            self.deadlineMargin = deadlineMargin
            self.applicationName = applicationName
            self.keepalives = keepalives
            self.preparedStatements = preparedStatements
        }

        /// The longest wait for one statement's answer: `statementTimeout` plus `deadlineMargin`; `nil` (wait as
        /// long as it takes) when there is no statement timeout.
        public var callTimeout: Duration? {
            statementTimeout.map { $0 + deadlineMargin }
        }
    }

    /// libpq's TCP keepalive settings (`keepalives`, `keepalives_idle`, `keepalives_interval`, `keepalives_count`)
    /// and `tcp_user_timeout`. The defaults find a dead peer within seconds: an idle connection is probed after 5 s
    /// and given up 3 unanswered probes 2 s apart later; unacknowledged data is given up after 10 s. A connection
    /// string that sets any of these keeps its own value. They do not apply to Unix-domain sockets.
    public struct Keepalives: Sendable, Equatable {
        /// Whether keepalives are on. Default true.
        public var enabled: Bool
        /// Idle time before the first probe (whole seconds). Default 5 s.
        public var idle: Duration
        /// Time between probes (whole seconds). Default 2 s.
        public var interval: Duration
        /// Unanswered probes before the connection is dead. Default 3.
        public var count: Int
        /// How long sent data may stay unacknowledged before the connection is dead (milliseconds); `nil` keeps
        /// the system's. Default 10 s.
        public var userTimeout: Duration?

        /// Creates keepalive settings.
        ///
        /// - Parameters:
        ///   - enabled: Whether keepalives are on.
        ///   - idle: Idle time before the first probe.
        ///   - interval: Time between probes.
        ///   - count: Probes before giving up.
        ///   - userTimeout: `tcp_user_timeout`, or `nil`.
        public init(
            enabled: Bool = true, idle: Duration = .seconds(5), interval: Duration = .seconds(2), count: Int = 3,
            userTimeout: Duration? = .seconds(10)
        ) {
            self.enabled = enabled
            self.idle = idle
            self.interval = interval
            self.count = count
            self.userTimeout = userTimeout
        }

        /// The libpq keywords and values.
        var settings: [(String, String)] {
            var settings = [("keepalives", enabled ? "1" : "0")]
            guard enabled else { return settings }
            settings += [
                ("keepalives_idle", String(max(1, Int(idle.postgresSeconds.rounded(.up))))),
                ("keepalives_interval", String(max(1, Int(interval.postgresSeconds.rounded(.up))))),
                ("keepalives_count", String(max(1, count))),
            ]
            if let userTimeout {
                settings.append(("tcp_user_timeout", String(userTimeout.postgresMilliseconds)))
            }
            return settings
        }
    }
}
