import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A private PgBouncer in front of a PostgreSQL server, in one directory, for tests of the service behind a
/// pooler.
///
/// Layout of `directory`: `pgbouncer.ini` (written by ``start()``), `users.txt` (the auth file: trust
/// authentication, the users listed, no passwords), `pgbouncer.log` and `pgbouncer.pid`. It listens on
/// 127.0.0.1:`port` only (no Unix socket) and sends every database name to the server it was given. When this
/// process is root it runs as the `postgres` OS user (PgBouncer refuses to run as root).
///
/// The pooler outlives this object: call ``stop()``, which signals exactly the process it started (by the id in
/// its pid file).
///
/// Thread safety: immutable; methods may be called from any thread, but not concurrently on the same pooler.
public final class PgBouncer: Sendable {
    /// How server connections are shared between clients (`pool_mode`).
    public enum PoolMode: String, Sendable {
        /// A client keeps one server connection until it disconnects.
        case session
        /// A client holds a server connection only for the duration of a transaction.
        case transaction
    }

    /// The pooler's directory (absolute).
    public let directory: String
    /// The TCP port on 127.0.0.1.
    public let port: Int
    /// The pool mode.
    public let poolMode: PoolMode
    /// The server's host and port.
    public let server: (host: String, port: Int)
    /// Server connections per database and user (`default_pool_size`).
    public let poolSize: Int
    /// The users the auth file lists.
    public let users: [String]
    /// The `pgbouncer` program.
    public let executable: String
    private let serverUser: ServerUser?

    /// Whether a `pgbouncer` program is installed (Debian package `pgbouncer`).
    public static var isAvailable: Bool {
        locate() != nil
    }

    /// Describes a pooler; touches nothing on disk.
    ///
    /// - Parameters:
    ///   - directory: Where its files go (created when needed).
    ///   - port: The port to listen on; `Cluster.freePort()` picks one.
    ///   - serverHost: The PostgreSQL server's host.
    ///   - serverPort: The PostgreSQL server's port.
    ///   - poolMode: How server connections are shared.
    ///   - poolSize: Server connections per database and user.
    ///   - users: The users clients connect as (trust authentication).
    /// - Throws: `ClusterError` with `.binariesNotFound` when `pgbouncer` is not installed, `.systemUser` when
    ///   root has no `postgres` user to run it as.
    public init(
        directory: String, port: Int, serverHost: String = Cluster.host, serverPort: Int,
        poolMode: PoolMode = .transaction, poolSize: Int = 4, users: [String] = [Cluster.user]
    ) throws {
        guard let executable = Self.locate() else {
            throw ClusterError(.binariesNotFound, "pgbouncer was not found; install the Debian package pgbouncer")
        }
        self.directory = URL(fileURLWithPath: directory).standardizedFileURL.path
        self.port = port
        self.server = (serverHost, serverPort)
        self.poolMode = poolMode
        self.poolSize = poolSize
        self.users = users
        self.executable = executable
        self.serverUser = try ServerUser.forCurrentProcess()
    }

    /// The URL of a database through the pooler.
    ///
    /// - Parameters:
    ///   - database: The database name.
    ///   - user: The user.
    /// - Returns: `postgresql://USER@127.0.0.1:PORT/DATABASE`.
    public func connectionURL(database: String = "postgres", user: String = Cluster.user) -> String {
        "postgresql://\(user)@\(Cluster.host):\(port)/\(database)"
    }

    /// The pooler's log file.
    public var logFile: String { directory + "/pgbouncer.log" }

    /// Writes the configuration, starts PgBouncer as a daemon and waits until it accepts connections.
    ///
    /// - Throws: `ClusterError` when it cannot be started or does not listen within 10 seconds.
    public func start() throws {
        let manager = FileManager.default
        do {
            try manager.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try manager.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory)
            try configuration.write(toFile: directory + "/pgbouncer.ini", atomically: true, encoding: .utf8)
            let userLines = users.map { "\"\($0)\" \"\"\n" }.joined()
            try userLines.write(toFile: directory + "/users.txt", atomically: true, encoding: .utf8)
        } catch {
            throw ClusterError(.invalidDirectory, "cannot prepare \(directory): \(error)")
        }
        if let serverUser {
            for path in [directory, directory + "/pgbouncer.ini", directory + "/users.txt"] {
                try serverUser.own(path)
            }
        }
        let arguments = ["-d", directory + "/pgbouncer.ini"]
        var command = serverUser?.command(executable, arguments) ?? Command(executable: executable, arguments: arguments)
        command.timeout = .seconds(30)
        try command.check("could not start pgbouncer on port \(port)", logFile: logFile)
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while !accepts() {
            guard clock.now < deadline else {
                throw ClusterError(
                    .timedOut, "pgbouncer on port \(port) did not accept connections within 10 s", logFile: logFile,
                    logTail: Command.read(logFile).tail(lines: 15))
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// The running pooler's process id, from its pid file.
    public var processID: Int32? {
        Int32(Command.read(directory + "/pgbouncer.pid").trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Stops the pooler (SIGTERM: immediate shutdown) and waits for it to exit; does nothing when it is not
    /// running.
    public func stop() {
        guard let processID, kill(processID, 0) == 0 else { return }
        kill(processID, SIGTERM)
        let deadline = ContinuousClock.now + .seconds(10)
        while kill(processID, 0) == 0, ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// Stops the pooler and deletes its directory.
    public func remove() {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `pgbouncer.ini`.
    var configuration: String {
        """
        ; Written by LocalCluster.PgBouncer for tests.
        [databases]
        * = host=\(server.host) port=\(server.port)

        [pgbouncer]
        listen_addr = \(Cluster.host)
        listen_port = \(port)
        unix_socket_dir =
        auth_type = trust
        auth_file = \(directory)/users.txt
        pool_mode = \(poolMode.rawValue)
        default_pool_size = \(poolSize)
        max_client_conn = 500
        server_lifetime = 3600
        logfile = \(directory)/pgbouncer.log
        pidfile = \(directory)/pgbouncer.pid

        """
    }

    /// Whether a TCP connection to the port succeeds now.
    private func accepts() -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr(Cluster.host)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return result == 0
    }

    /// The `pgbouncer` program: on `PATH`, or where Debian installs it.
    private static func locate() -> String? {
        let candidates = [Command.findInPath("pgbouncer"), "/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"]
        return candidates.compactMap { $0 }.first(where: FileManager.default.isExecutableFile)
    }
}
