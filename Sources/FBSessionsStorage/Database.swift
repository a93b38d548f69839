import FBSessionsCore
import Postgres

/// The pool the stores share, with the one place that turns "the database is not there" into the domain's
/// ``ServiceError/databaseUnavailable``.
public struct Database: Sendable {
    /// The connection pool.
    public let pool: PostgresPool

    /// Wraps a pool.
    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// Runs `body` on a pooled connection's own thread (it may block there).
    /// - Throws: ``ServiceError/databaseUnavailable`` when no connection can be had or the connection is lost;
    ///   other errors as thrown.
    public func run<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        do {
            return try await pool.withConnection(body)
        } catch let error as PostgresError where error.isUnavailable {
            throw ServiceError.databaseUnavailable
        }
    }

    /// Runs `body` in a transaction on a pooled connection.
    public func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        try await run { connection in try connection.transaction(body) }
    }
}
