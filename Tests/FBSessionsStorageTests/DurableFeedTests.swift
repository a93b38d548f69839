import FBSessionsCore
import FBSessionsStorage
import Foundation
import LocalCluster
import Postgres
import Testing
import TestSupport

/// The feed shows only events whose commit is on the synchronous standby.
///
/// A private cluster whose `synchronous_standby_names` names a standby that never connects stands for a primary
/// whose standby is frozen or cut off. An event committed with `synchronous_commit = local` is visible there but
/// not on the standby: what a primary shows for a moment when a backend's wait for its standby ends early (the
/// postmaster died, or a cancel request came).
@Suite("The feed and a standby that lags", .serialized)
struct DurableFeedTests {
    private static let canRunClusters =
        PostgresBinaries.isAvailable || ProcessInfo.processInfo.environment["CI"] == "true"

    /// A migrated private cluster with one app, and a connection to it that commits without waiting.
    private func makeCluster() throws -> (Cluster, PostgresConnection) {
        let directory = "/tmp/durable-feed-\(UUID().uuidString.prefix(8).lowercased())"
        let cluster = try Cluster(directory: directory, port: Cluster.freePort(), options: .init(durable: false))
        _ = try cluster.initializeIfNeeded()
        try cluster.start()
        let admin = try PostgresConnection(connectionString: cluster.connectionURL())
        _ = try Migrator(migrations: try TestDatabase.migrations()).migrate(on: admin)
        try admin.execute(
            """
            INSERT INTO apps (id, name, facebook_app_id, secret_key_id, secret_box)
            VALUES ('app_1', 'feed', '1001', 'k1', '\\x00'::bytea)
            """)
        try admin.simpleQuery(unsafeSQL: "SET synchronous_commit TO local")
        return (cluster, admin)
    }

    /// A store on a pool of one connection, so that what that connection's backend has loaded of the server's
    /// configuration can be checked through the pool.
    private func store(_ cluster: Cluster) -> (PostgresEventStore, PostgresPool) {
        let pool = PostgresPool(
            configuration: .init(
                connectionString: cluster.connectionURL(), size: 1, acquireTimeout: .seconds(2),
                statementTimeout: .seconds(1), connectTimeout: .seconds(2)))
        return (PostgresEventStore(database: Database(pool: pool)), pool)
    }

    /// Waits until the pool's backend has loaded the reloaded `synchronous_standby_names` (a reload reaches each
    /// backend a moment after `pg_reload_conf()` returns).
    private func awaitStandbySetting(_ expected: String, through pool: PostgresPool) async throws {
        for _ in 0..<100 {
            let current = try await pool.query("SELECT current_setting('synchronous_standby_names') AS s")
            if try current.first?.decode("s", as: String.self) == expected { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("the backend never loaded synchronous_standby_names = '\(expected)'")
    }

    @Test(.enabled(if: canRunClusters)) func anEventTheStandbyLacksIsNotShownUntilItHasIt() async throws {
        let (cluster, admin) = try makeCluster()
        defer { try? cluster.remove() }
        defer { admin.close() }
        let (events, pool) = store(cluster)
        defer { pool.shutdown() }
        try admin.execute("INSERT INTO events (app_id, type) VALUES ('app_1', 'session.created')")
        #expect(try await events.events(appID: "app_1", after: nil, limit: 10).events.count == 1)

        try PhantomStandby.require(on: cluster, admin: admin)
        try await awaitStandbySetting(PhantomStandby.name, through: pool)
        try admin.execute("INSERT INTO events (app_id, type) VALUES ('app_1', 'session.closed')")
        // Visible on the primary, not on the standby: the feed gives up at its deadline rather than show it.
        let started = ContinuousClock.now
        await #expect(throws: ServiceError.databaseUnavailable) {
            _ = try await events.events(appID: "app_1", after: nil, limit: 10)
        }
        #expect(ContinuousClock.now - started < .seconds(4))

        // Once the standby has it (here: once no standby is required), the feed shows it, after the first.
        try PhantomStandby.release(admin: admin)
        var page: EventPage?
        for _ in 0..<50 where page == nil {
            page = try? await events.events(appID: "app_1", after: nil, limit: 10)
            if page == nil { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(page?.events.map(\.type) == ["session.created", "session.closed"])
    }
}
