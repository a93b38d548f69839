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

    /// Runs `body` in a transaction on a pooled connection, through ``PostgresPool/transaction(_:)``: a
    /// transaction PostgreSQL aborts as a deadlock victim or a serialization failure runs again (a few times),
    /// so `body` must act only on the database.
    /// - Throws: ``ServiceError/databaseUnavailable`` when no connection can be had or the connection is lost;
    ///   other errors as thrown.
    public func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        do {
            return try await pool.transaction(body)
        } catch let error as PostgresError where error.isUnavailable {
            throw ServiceError.databaseUnavailable
        }
    }
}
