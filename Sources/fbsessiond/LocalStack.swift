import Foundation
import LocalCluster

/// The private stack `fbsessiond run` keeps in `./.fbsessions`: its PostgreSQL cluster (`pg/`, on the port in
/// `pg-port`, database `fbsessions`) and its key ring (`encryption-keys`). The admin commands (`migrate`, `app`,
/// `key`, `webhook`, `sweep`, `reencrypt`) use it when `DATABASE_URL` is not set, so that they work beside a
/// running `fbsessiond run` as they would beside `serve`; `serve` never does (it is configured explicitly).
enum LocalStack {
    /// `./.fbsessions`, where `run` keeps everything.
    static var home: String { RunCommand.home }

    /// `environment` with `DATABASE_URL` (and `FBS_ENCRYPTION_KEYS`, when unset) taken from the `run` stack in
    /// `home`, when `DATABASE_URL` is not set and that stack's PostgreSQL is running; otherwise `environment`.
    /// - Parameters:
    ///   - environment: the process environment.
    ///   - home: the stack's folder (``home`` by default).
    /// - Returns: the environment the command should read its settings from.
    /// - Throws: ``CommandFailure`` when `DATABASE_URL` is not set and a `run` stack exists there but its
    ///   PostgreSQL is not running (saying how to start it).
    static func environment(_ environment: [String: String], home: String = LocalStack.home) throws -> [String: String] {
        guard environment["DATABASE_URL", default: ""].isEmpty else { return environment }
        let portFile = home + "/pg-port"
        guard let text = try? String(contentsOfFile: portFile, encoding: .utf8) else { return environment }
        guard let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)), (1...65535).contains(port) else {
            throw CommandFailure("DATABASE_URL is not set, and \(portFile) does not hold a port number")
        }
        let cluster: Cluster
        do {
            cluster = try Cluster(directory: home + "/pg", port: port)
        } catch {
            throw CommandFailure("DATABASE_URL is not set, and the `fbsessiond run` stack in \(home) cannot be used: \(error)")
        }
        guard cluster.isRunning else {
            throw CommandFailure(
                "DATABASE_URL is not set, and the `fbsessiond run` stack in \(home) is not running; "
                    + "start it with `fbsessiond run` (in this folder), or set DATABASE_URL")
        }
        var filled = environment
        filled["DATABASE_URL"] = cluster.connectionURL(database: "fbsessions")
        if filled["FBS_ENCRYPTION_KEYS", default: ""].isEmpty,
            let keys = try? String(contentsOfFile: home + "/encryption-keys", encoding: .utf8)
        {
            filled["FBS_ENCRYPTION_KEYS"] = keys.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return filled
    }

    /// The paragraph every admin command's `--help` ends with (after a blank line).
    static let helpNote = "\n" + """
        Without DATABASE_URL, it uses the stack `fbsessiond run` keeps in ./.fbsessions (its PostgreSQL and its
        FBS_ENCRYPTION_KEYS) while that stack is running, so it works beside `fbsessiond run` in the same folder.
        """
}
