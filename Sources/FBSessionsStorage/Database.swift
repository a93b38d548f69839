import FBSessionsCore
import Postgres
import Tracing

/// The pool the stores share, with the one place that turns "the database is not there" into the domain's
/// ``ServiceError/databaseUnavailable``.
public struct Database: Sendable {
    /// The connection pool.
    public let pool: PostgresPool
    /// Makes the database spans of traced requests (`postgresql query`, `postgresql transaction`, `postgresql
    /// batch`); nil when tracing is off. The assembly sets it.
    public var tracer: Tracer?

    /// Wraps a pool.
    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// Runs `body` on a pooled connection's own thread (it may block there).
    /// - Throws: ``ServiceError/databaseUnavailable`` when no connection can be had or the connection is lost;
    ///   other errors as thrown.
    public func run<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        if let tracer, let span = tracer.child("postgresql query") {
            return try await traced(span) { try await untraced(body) }
        }
        return try await untraced(body)
    }

    private func untraced<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
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
        if let tracer, let span = tracer.child("postgresql transaction") {
            return try await traced(span) { try await untracedTransaction(body) }
        }
        return try await untracedTransaction(body)
    }

    /// Runs `work` as `span`: a database span, ERROR when it throws (with the error's kind, never its text, which
    /// may quote a value).
    private func traced<T>(_ span: Span, _ work: () async throws -> T) async throws -> T {
        span.set("db.system.name", "postgresql")
        defer { span.end() }
        do {
            return try await work()
        } catch {
            span.setError("database error")
            throw error
        }
    }

    private func untracedTransaction<T: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) throws -> T
    ) async throws -> T {
        do {
            return try await pool.transaction(body)
        } catch let error as PostgresError where error.isUnavailable {
            throw ServiceError.databaseUnavailable
        }
    }
}
