import Foundation
import LocalCluster

/// A private PgBouncer (Debian's, 1.18 here) in front of the test server, for tests of the service behind a
/// pooler.
///
/// Gated like the database tests, and on `pgbouncer` being installed; with `CI=true` the tests run anyway and
/// fail when it is missing (`.ci/run` installs it), so CI cannot pass by skipping them.
public enum TestPooler {
    /// Whether pooler tests run.
    public static var isEnabled: Bool {
        TestDatabase.isEnabled && (PgBouncer.isAvailable || ProcessInfo.processInfo.environment["CI"] == "true")
    }

    /// Starts a PgBouncer on a free port in front of the server of `TEST_DATABASE_URL`, in a fresh directory
    /// under /tmp (the `postgres` OS user must reach it). Stop it with `remove()`.
    ///
    /// - Parameters:
    ///   - mode: The pool mode.
    ///   - poolSize: Server connections per database and user: fewer than the clients, so that clients change
    ///     server sessions all the time.
    /// - Returns: The running pooler.
    /// - Throws: ``TestSetupError`` without a test database, `ClusterError` when PgBouncer cannot start.
    public static func start(mode: PgBouncer.PoolMode = .transaction, poolSize: Int = 3) throws -> PgBouncer {
        let server = try TestDatabase.requireServerURL()
        guard let components = URLComponents(string: server), let port = components.port else {
            throw TestSetupError("TEST_DATABASE_URL has no port: \(server)")
        }
        let bouncer = try PgBouncer(
            directory: "/tmp/fbs-pgbouncer-\(UUID().uuidString.prefix(8).lowercased())", port: Cluster.freePort(),
            serverHost: components.host ?? Cluster.host, serverPort: port, poolMode: mode, poolSize: poolSize,
            users: [components.user ?? Cluster.user])
        try bouncer.start()
        return bouncer
    }

    /// `databaseURL` (a `postgresql://` URI on the test server) through `bouncer`: the same database and user,
    /// the pooler's host and port.
    public static func url(_ databaseURL: String, through bouncer: PgBouncer) -> String {
        guard var components = URLComponents(string: databaseURL) else { return databaseURL }
        components.host = Cluster.host
        components.port = bouncer.port
        return components.string ?? databaseURL
    }
}
