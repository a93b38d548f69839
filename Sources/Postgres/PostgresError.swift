import Foundation

/// The one error type of the `Postgres` module.
///
/// `description` is generic on purpose: it names the code and the SQLSTATE, never the SQL parameters, the
/// server's message (which can echo parameter values, for example in a constraint violation's DETAIL) or the
/// connection string. The server's text, scrubbed of the query's parameter values and of the connection
/// password, is only in `debugDescription`, which is meant for debug-level logs.
public struct PostgresError: Error, CustomStringConvertible, CustomDebugStringConvertible, Sendable {
    /// What went wrong, as an extensible set of static constants.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case connectionFailed, connectionLost, queryFailed, timedOut
            case poolExhausted, poolTimeout, poolClosed, decodingFailed
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// A connection could not be opened (server down, refused, authentication failed, timed out).
        public static let connectionFailed = Code(.connectionFailed)
        /// An open connection broke while it was used; the statement may or may not have run.
        public static let connectionLost = Code(.connectionLost)
        /// The server answered the statement with an error; see `sqlState`.
        public static let queryFailed = Code(.queryFailed)
        /// The server did not answer within the client's own deadline (`statement_timeout` plus a margin, see
        /// `PostgresConnection.Options`): the statement was cancelled (`PQcancel`, in the background) and the
        /// connection closed. The statement may or may not have run.
        public static let timedOut = Code(.timedOut)
        /// The pool's wait queue was full (`maxWaiters`), so the call was refused at once.
        public static let poolExhausted = Code(.poolExhausted)
        /// No connection became free within the pool's `acquireTimeout`.
        public static let poolTimeout = Code(.poolTimeout)
        /// The pool was shut down.
        public static let poolClosed = Code(.poolClosed)
        /// A value could not be decoded into the requested Swift type, or a column was missing.
        public static let decodingFailed = Code(.decodingFailed)

        /// The code's name, for example `queryFailed`.
        public var description: String {
            base.rawValue
        }
    }

    /// What went wrong.
    public let code: Code
    /// The five-character SQLSTATE from the server (`PG_DIAG_SQLSTATE`), for example `23505`, if there was one.
    public let sqlState: String?
    /// The name of the violated constraint (`PG_DIAG_CONSTRAINT_NAME`), if the server reported one.
    public let constraintName: String?
    /// Scrubbed diagnostic text; only ever shown by `debugDescription`.
    let detail: String?
    /// True when the server refused the statement before running any of it: it did not know the prepared
    /// statement (26000), already had one of that name (42P05, from a `PQprepare`), or found the protocol
    /// messages wrong (08P01, at Parse or Bind). Such a statement may be sent again (see `PostgresPool`).
    var statementDidNotRun = false

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - code: What went wrong.
    ///   - sqlState: The server's SQLSTATE, if any.
    ///   - constraintName: The violated constraint, if any.
    ///   - detail: Diagnostic text for `debugDescription`; it must already be free of secrets.
    init(_ code: Code, sqlState: String? = nil, constraintName: String? = nil, detail: String? = nil) {
        self.code = code
        self.sqlState = sqlState
        self.constraintName = constraintName
        self.detail = detail
    }

    /// True when the database is (perhaps briefly) unavailable or failing rather than the request being wrong.
    /// Callers answer these with 503 and `Retry-After`, never with an answer about the request's data.
    ///
    /// That is: connection failures, lost connections, the client's deadline, an exhausted or timed-out pool, and
    /// server errors that describe the server or its setup rather than the statement (PostgreSQL's SQLSTATE
    /// classes in its manual, appendix A): connection exceptions (class 08, which includes 08P01, a protocol
    /// violation), transaction rollbacks that outlived the pool's retries (40), insufficient resources (53),
    /// operator intervention (57: `statement_timeout` is 57014, a shutdown 57P01-57P03), system and internal
    /// errors (58, XX), a read-only transaction (25006: a standby after a failover), a missing privilege (42501:
    /// a revoked grant), a lock not available (55P03), and the prepared-statement errors a pooler causes (26000,
    /// 42P05). What is left (syntax, undefined objects, data and constraint errors) describes the statement: a
    /// store turns the expected ones into its own errors, and the rest are bugs.
    public var isUnavailable: Bool {
        switch code {
        case .connectionFailed, .connectionLost, .timedOut, .poolExhausted, .poolTimeout, .poolClosed:
            return true
        case .queryFailed:
            guard let sqlState else { return false }
            return Self.unavailableClasses.contains(String(sqlState.prefix(2)))
                || Self.unavailableStates.contains(sqlState)
        default:
            return false
        }
    }

    /// SQLSTATE classes that say the server cannot serve now (``isUnavailable``).
    private static let unavailableClasses: Set<String> = ["08", "40", "53", "57", "58", "XX"]
    /// Single SQLSTATEs that say the same (``isUnavailable``).
    private static let unavailableStates: Set<String> = ["25006", "42501", "55P03", "26000", "42P05"]

    /// The SQLSTATEs after which a connection is closed rather than reused: whatever the server session holds
    /// is no longer what this client believes (a pooler changed sessions under it, or the protocol went wrong).
    static let discardingStates: Set<String> = ["08P01", "26000", "42P05"]

    /// True when PostgreSQL aborted the transaction because of other transactions, not because of the statement:
    /// a deadlock (40P01) or a serialization failure (40001). Running it again is the documented remedy.
    public var isConflict: Bool {
        code == .queryFailed && (sqlState == "40P01" || sqlState == "40001")
    }

    /// A generic text safe for any log: the code and the SQLSTATE, never parameters or server text.
    public var description: String {
        if let sqlState {
            return "PostgresError(code: \(code), sqlState: \(sqlState))"
        }
        return "PostgresError(code: \(code))"
    }

    /// The generic text plus the scrubbed server or libpq message. For debug-level logs only.
    public var debugDescription: String {
        var text = description
        if let constraintName {
            text += " constraint: \(constraintName)"
        }
        if let detail, !detail.isEmpty {
            text += " message: \(detail)"
        }
        return text
    }
}

extension PostgresError {
    /// Returns `message` with every occurrence of each secret replaced by `<redacted>`.
    ///
    /// Secrets shorter than three characters are left alone: replacing every `1` or `t` would mangle the
    /// message without protecting anything worth protecting.
    ///
    /// - Parameters:
    ///   - message: Text from libpq or the server.
    ///   - secrets: Parameter values, passwords and the like.
    /// - Returns: The scrubbed text.
    static func scrub(_ message: String, removing secrets: [String]) -> String {
        var text = message
        for secret in secrets.filter({ $0.count >= 3 }).sorted(by: { $0.count > $1.count }) {
            text = text.replacingOccurrences(of: secret, with: "<redacted>")
        }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
