import FBSessionsCore
import Postgres

/// ``ReadinessProbe`` over PostgreSQL: the database answers and every known migration is applied unchanged.
public struct PostgresReadiness: ReadinessProbe {
    private let database: Database
    private let migrator: Migrator

    /// Creates the probe.
    public init(database: Database, migrator: Migrator) {
        self.database = database
        self.migrator = migrator
    }

    public func readiness() async -> Readiness {
        do {
            let states = try await database.run { connection in try migrator.status(on: connection) }
            let current = states.allSatisfy { if case .applied = $0.state { true } else { false } }
            return Readiness(databaseReachable: true, migrationsCurrent: current)
        } catch {
            return Readiness(databaseReachable: false, migrationsCurrent: false)
        }
    }
}
