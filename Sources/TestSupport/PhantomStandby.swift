import Foundation
import LocalCluster
import Postgres

/// A synchronous standby that never connects, for tests of what the service does while its standby is away.
///
/// Naming it in `synchronous_standby_names` makes every commit with `synchronous_commit = on` wait. The reload
/// that does so lands in three places at their own pace: each backend at its next command, the postmaster (and so
/// the backends it forks next), and the checkpointer, which publishes to all backends whether a standby is
/// required at all. Until the checkpointer has, commits do not wait even in a backend that shows the new setting;
/// under load (a sanitizer build, CI) that gap reaches tens of milliseconds. ``require(on:admin:)`` returns only
/// once a commit has been seen to wait.
public enum PhantomStandby {
    /// The name the standby is given.
    public static let name = "phantom"

    /// Names the standby and returns once commits on new connections wait for it.
    ///
    /// Each probe commits one row of a private table on a connection of its own with a short deadline. A probe
    /// that answers came too early; one that times out waits for the standby, and its backend is then cancelled,
    /// so that it ends (committed locally) instead of holding back the snapshots of what the test reads next.
    ///
    /// - Parameters:
    ///   - cluster: The cluster.
    ///   - admin: A superuser connection to it.
    /// - Throws: `PostgresError` from the statements; `TestSetupError` if commits never wait.
    public static func require(on cluster: Cluster, admin: PostgresConnection) throws {
        try admin.simpleQuery(unsafeSQL: "CREATE TABLE IF NOT EXISTS phantom_standby_probe (n int)")
        try admin.simpleQuery(unsafeSQL: "ALTER SYSTEM SET synchronous_standby_names TO '\(name)'")
        try admin.simpleQuery(unsafeSQL: "SELECT pg_reload_conf()")
        for _ in 0..<100 {
            let probe = try PostgresConnection(
                connectionString: cluster.connectionURL(),
                options: .init(statementTimeout: .milliseconds(200), deadlineMargin: .milliseconds(100)))
            defer { probe.close() }
            let pid = try probe.query("SELECT pg_backend_pid() AS pid").first?.decode("pid", as: Int32.self) ?? 0
            do {
                try probe.simpleQuery(unsafeSQL: "SET synchronous_commit TO on")
                _ = try probe.execute("INSERT INTO phantom_standby_probe VALUES (1)")
            } catch let error as PostgresError where error.code == .timedOut {
                try cancelWait(of: pid, admin: admin)
                return
            }
            usleep(50_000)
        }
        throw TestSetupError("commits never began to wait for the standby '\(name)'")
    }

    /// Lets commits go without a standby again: what the standby's acknowledgement does for a waiting commit.
    ///
    /// - Parameter admin: A superuser connection.
    /// - Throws: `PostgresError` from the statements.
    public static func release(admin: PostgresConnection) throws {
        try admin.simpleQuery(unsafeSQL: "ALTER SYSTEM RESET synchronous_standby_names")
        try admin.simpleQuery(unsafeSQL: "SELECT pg_reload_conf()")
    }

    /// Cancels the probe's wait for the standby, and returns once its backend no longer waits.
    private static func cancelWait(of pid: Int32, admin: PostgresConnection) throws {
        for _ in 0..<250 {
            let waiting = try admin.query(
                "SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = \(pid) AND wait_event = 'SyncRep'")
            if try waiting.first?.decode("n", as: Int.self) == 0 { return }
            _ = try admin.query("SELECT pg_cancel_backend(\(pid)) AS cancelled")
            usleep(20_000)
        }
        throw TestSetupError("the standby probe's backend kept waiting after a cancel")
    }
}
