import Foundation
import Postgres

/// Applies migrations in order, each in its own transaction, recorded with its checksum in `schema_migrations`.
///
/// A session-level advisory lock is held throughout, so instances starting together apply each migration once:
/// the second waits, then finds nothing left to do. An applied migration whose file has changed since is refused,
/// because the database no longer matches what the files say.
public struct Migrator: Sendable {
    /// The state of one migration.
    public struct Status: Sendable, Equatable {
        /// How a migration stands.
        public enum State: Sendable, Equatable {
            /// Applied with the same checksum.
            case applied(Date)
            /// Not applied yet.
            case pending
            /// Applied, but the file has changed since.
            case changed
            /// Applied, but no file of this binary has the number (a newer binary ran).
            case unknown
        }

        /// NNNN.
        public let version: Int
        /// Name.
        public let name: String
        /// State.
        public let state: State
    }

    /// Arbitrary but fixed: the advisory lock key for migrations.
    static let lockKey: Int64 = 0x6662_735F_6D69_6772

    /// The migrations this binary knows.
    public let migrations: [Migration]

    /// Creates a migrator for these migrations (in version order).
    public init(migrations: [Migration]) {
        self.migrations = migrations
    }

    /// Applies every pending migration. Returns those applied now.
    /// - Throws: ``MigrationError`` when an applied migration changed or is unknown; `PostgresError` otherwise.
    public func migrate(on connection: PostgresConnection) throws -> [Migration] {
        _ = try connection.query("SELECT pg_advisory_lock(\(Self.lockKey))")
        defer { _ = try? connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))") }
        try createHistoryTable(on: connection)
        let states = try status(on: connection)
        if let changed = states.first(where: { $0.state == .changed }) {
            throw MigrationError(
                "migration \(changed.version) (\(changed.name)) was edited after it was applied; "
                    + "restore the file and add a new migration for the change")
        }
        if let unknown = states.first(where: { $0.state == .unknown }) {
            throw MigrationError(
                "the database has migration \(unknown.version) (\(unknown.name)), which this binary does not know; "
                    + "run a newer fbsessiond")
        }
        var applied: [Migration] = []
        for migration in migrations where states.contains(where: { $0.version == migration.version && $0.state == .pending }) {
            try connection.transaction { transaction in
                _ = try transaction.simpleQuery(unsafeSQL: migration.sql)
                _ = try transaction.execute(
                    """
                    INSERT INTO schema_migrations (version, name, checksum)
                    VALUES (\(migration.version), \(migration.name), \(migration.checksum))
                    """)
            }
            applied.append(migration)
        }
        return applied
    }

    /// The state of every known and every applied migration, by version.
    public func status(on connection: PostgresConnection) throws -> [Status] {
        let exists = try connection.query("SELECT to_regclass('schema_migrations') IS NOT NULL AS present")
        var recorded: [Int: (name: String, checksum: String, at: Date)] = [:]
        if try exists.first?.decode("present", as: Bool.self) == true {
            for row in try connection.query("SELECT version, name, checksum, applied_at FROM schema_migrations") {
                recorded[try row.decode("version", as: Int.self)] = (
                    try row.decode("name", as: String.self), try row.decode("checksum", as: String.self),
                    try row.decode("applied_at", as: Date.self)
                )
            }
        }
        var result = migrations.map { migration -> Status in
            guard let entry = recorded[migration.version] else {
                return Status(version: migration.version, name: migration.name, state: .pending)
            }
            let state: Status.State = entry.checksum == migration.checksum ? .applied(entry.at) : .changed
            return Status(version: migration.version, name: migration.name, state: state)
        }
        for (version, entry) in recorded where !migrations.contains(where: { $0.version == version }) {
            result.append(Status(version: version, name: entry.name, state: .unknown))
        }
        return result.sorted { $0.version < $1.version }
    }

    private func createHistoryTable(on connection: PostgresConnection) throws {
        _ = try connection.simpleQuery(
            unsafeSQL: """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version    integer PRIMARY KEY,
                    name       text NOT NULL,
                    checksum   text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """)
    }
}
