import Foundation

/// A private PostgreSQL cluster in one directory, run with the PostgreSQL server programs.
///
/// Layout of `directory`: `data/` (the data directory), `socket/` (the private unix-socket directory) and
/// `postgres.log` (the server log). The server listens on 127.0.0.1:`port` and on that socket only, with trust
/// authentication for the `postgres` role, so there are no passwords. When this process is root, `initdb` and
/// `pg_ctl` run as the `postgres` OS user through `runuser`, and `directory` belongs to that user.
///
/// The server outlives this object: nothing stops it implicitly. Call `stop(mode:)` (or `remove()`).
/// Methods block the calling thread while the programs run and log nothing; failures are thrown as
/// `ClusterError` with the command's output tail and the server log's path.
///
/// Thread safety: immutable; methods may be called from any thread, but not concurrently on the same cluster.
public final class Cluster: Sendable {
    /// Settings of the server.
    public struct Options: Sendable, Hashable {
        /// Whether writes survive a crash of the machine. `false` turns off `fsync` and `full_page_writes`
        /// (committed data still survives a crash or kill of the server): for throwaway test clusters only.
        public var durable: Bool
        /// The server's `max_connections`, or nil for PostgreSQL's default (100).
        public var maxConnections: Int?
        /// How long `start()` and `stop(mode:)` wait for the server.
        public var timeout: Duration

        /// Creates options.
        /// - Parameters:
        ///   - durable: keep `fsync` on (default); pass `false` for throwaway test clusters.
        ///   - maxConnections: the server's `max_connections`, nil for the default.
        ///   - timeout: how long start and stop may take.
        public init(durable: Bool = true, maxConnections: Int? = nil, timeout: Duration = .seconds(60)) {
            self.durable = durable
            self.maxConnections = maxConnections
            self.timeout = timeout
        }
    }

    /// How `stop(mode:)` shuts the server down (`pg_ctl stop -m`).
    public enum StopMode: String, Sendable {
        /// Wait for every client to disconnect.
        case smart
        /// Disconnect clients, then shut down cleanly.
        case fast
        /// Quit at once; the next start runs crash recovery.
        case immediate
    }

    /// The address the server listens on.
    public static let host = "127.0.0.1"
    /// The superuser role (trust authentication).
    public static let user = "postgres"

    /// The cluster's directory (absolute), which holds the data directory.
    public let directory: String
    /// The PostgreSQL data directory, `directory/data`.
    public let dataDirectory: String
    /// The private directory of the server's unix socket, `directory/socket`.
    public let socketDirectory: String
    /// The server log, `directory/postgres.log`.
    public let logFile: String
    /// The TCP port on 127.0.0.1.
    public let port: Int
    /// The server settings.
    public let options: Options
    /// The programs used.
    public let binaries: PostgresBinaries
    /// The OS user the server runs as when this process is root; nil otherwise.
    let serverUser: ServerUser?

    /// Describes a cluster; touches nothing on disk.
    /// - Parameters:
    ///   - directory: where the cluster lives (created when needed); relative to the current directory
    ///     unless absolute.
    ///   - port: the TCP port on 127.0.0.1; `Cluster.freePort()` picks one.
    ///   - options: server settings; the defaults suit a long-lived cluster.
    ///   - binaries: the PostgreSQL programs; found with `PostgresBinaries.locate()` when nil.
    /// - Throws: `ClusterError` when the binaries are not found, the directory path cannot be used, or this
    ///   process is root and the `postgres` OS user is missing.
    public init(
        directory: String,
        port: Int,
        options: Options = Options(),
        binaries: PostgresBinaries? = nil
    ) throws {
        let absolute = URL(fileURLWithPath: directory).standardizedFileURL.path
        self.directory = absolute
        self.dataDirectory = absolute + "/data"
        self.socketDirectory = absolute + "/socket"
        self.logFile = absolute + "/postgres.log"
        self.port = port
        self.options = options
        self.binaries = try binaries ?? PostgresBinaries.locate()
        self.serverUser = try ServerUser.forCurrentProcess()
        try validate()
    }

    /// The URL of a database on this cluster, for libpq and `psql`.
    /// - Parameter database: the database name.
    /// - Returns: `postgresql://postgres@127.0.0.1:PORT/DATABASE`.
    public func connectionURL(database: String = "postgres") -> String {
        let name = database.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? database
        return "postgresql://\(Cluster.user)@\(Cluster.host):\(port)/\(name)"
    }

    /// Creates the directories and runs `initdb`, unless the data directory already holds a cluster.
    /// - Returns: true when `initdb` ran, false when the cluster already existed.
    /// - Throws: `ClusterError` when a directory cannot be prepared or `initdb` fails.
    @discardableResult
    public func initializeIfNeeded() throws -> Bool {
        if isInitialized {
            try prepareDirectories()
            return false
        }
        let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: dataDirectory)) ?? []
        guard leftovers.isEmpty else {
            throw ClusterError(
                .invalidDirectory,
                "\(dataDirectory) has files but no PG_VERSION (an interrupted initdb?); remove it and try again"
            )
        }
        try prepareDirectories()
        try serverCommand(
            binaries.initdb,
            ["-D", dataDirectory, "-A", "trust", "-U", Cluster.user, "--encoding=UTF8", "--locale=C"]
        ).check("initdb failed for \(dataDirectory)")
        return true
    }

    /// Whether the data directory holds an initialized cluster.
    public var isInitialized: Bool {
        FileManager.default.fileExists(atPath: dataDirectory + "/PG_VERSION")
    }

    /// Whether the server is running (`pg_ctl status`).
    public var isRunning: Bool {
        ((try? runningPort()) ?? nil) != nil
    }

    /// Starts the server and waits until it accepts connections. Does nothing if it already runs on `port`.
    ///
    /// A `postmaster.pid` left by a crash is handled by `pg_ctl` and the server; one whose process id now
    /// belongs to an unrelated process is removed first.
    /// - Throws: `ClusterError` with `.notInitialized`, `.portConflict` (already running on another port),
    ///   `.commandFailed` (with the log's tail) or `.timedOut`.
    public func start() throws {
        guard isInitialized else {
            throw ClusterError(.notInitialized, "no cluster in \(dataDirectory); call initializeIfNeeded() first")
        }
        try prepareDirectories()
        if let running = try runningPort() {
            guard running == port else {
                throw ClusterError(
                    .portConflict,
                    "the cluster in \(dataDirectory) already runs on port \(running), not \(port); stop it first",
                    logFile: logFile
                )
            }
            try waitUntilAccepting(timeout: options.timeout)
            return
        }
        let seconds = max(1, Int(options.timeout.timeInterval.rounded(.up)))
        var start = serverCommand(
            binaries.pgCtl,
            ["-D", dataDirectory, "-l", logFile, "-w", "-t", String(seconds), "-o", serverOptions, "start"]
        )
        start.timeout = options.timeout + .seconds(15)
        try start.check("could not start PostgreSQL on port \(port)", logFile: logFile)
        try waitUntilAccepting(timeout: options.timeout)
    }

    /// Stops the server (`pg_ctl stop -w -m MODE`); does nothing when it is not running.
    /// - Parameter mode: how to shut down; `.fast` by default.
    /// - Throws: `ClusterError` when `pg_ctl` fails and the server still runs.
    public func stop(mode: StopMode = .fast) throws {
        guard isInitialized, try runningPort() != nil else {
            return
        }
        let seconds = max(1, Int(options.timeout.timeInterval.rounded(.up)))
        var stop = serverCommand(
            binaries.pgCtl,
            ["-D", dataDirectory, "-w", "-t", String(seconds), "-m", mode.rawValue, "stop"]
        )
        stop.timeout = options.timeout + .seconds(15)
        let result = try stop.run()
        if result.status != 0, try runningPort() != nil {
            throw ClusterError(
                .commandFailed,
                "could not stop PostgreSQL in \(dataDirectory)",
                command: stop.commandLine,
                exitStatus: result.status,
                output: result.outputTail,
                logFile: logFile,
                logTail: Command.read(logFile).tail(lines: 15)
            )
        }
    }

    /// Stops the server at once if it runs, then deletes `directory` with everything in it.
    /// - Throws: `ClusterError` when the server cannot be stopped or the directory cannot be removed.
    public func remove() throws {
        if isInitialized {
            try stop(mode: .immediate)
        }
        do {
            if FileManager.default.fileExists(atPath: directory) {
                try FileManager.default.removeItem(atPath: directory)
            }
        } catch {
            throw ClusterError(.invalidDirectory, "cannot remove \(directory): \(error)")
        }
    }

    /// Waits until the server answers `select 1` over TCP.
    /// - Parameter timeout: how long to keep trying.
    /// - Throws: `ClusterError.timedOut` with the last `psql` output and the log's tail.
    public func waitUntilAccepting(timeout: Duration = .seconds(30)) throws {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var probe = Command(
            executable: binaries.psql,
            arguments: ["-X", "-w", "-q", "-A", "-t", "-d", connectionURL() + "?connect_timeout=2", "-c", "select 1"]
        )
        probe.timeout = .seconds(10)
        while true {
            let result = try probe.run()
            if result.status == 0 {
                return
            }
            guard clock.now < deadline else {
                throw ClusterError(
                    .timedOut,
                    "PostgreSQL on port \(port) did not accept connections within \(timeout)",
                    command: probe.commandLine,
                    exitStatus: result.status,
                    output: result.outputTail,
                    logFile: logFile,
                    logTail: Command.read(logFile).tail(lines: 15)
                )
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
    }

    // MARK: - Internals

    /// The `-o` string for `pg_ctl start`. `pg_ctl` hands it to `/bin/sh`, so the socket directory is
    /// single-quoted; `validate()` made sure the path has no quote, `$`, backquote or backslash.
    var serverOptions: String {
        var settings = [
            "-p \(port)",
            "-k '\(socketDirectory)'",
            "-c listen_addresses=\(Cluster.host)",
            "-c unix_socket_permissions=0700",
        ]
        if !options.durable {
            settings += ["-c fsync=off", "-c full_page_writes=off"]
        }
        if let maxConnections = options.maxConnections {
            settings.append("-c max_connections=\(maxConnections)")
        }
        return settings.joined(separator: " ")
    }

    /// The port the server runs on, or nil when it is not running.
    func runningPort() throws -> Int? {
        guard isInitialized else {
            return nil
        }
        let status = try serverCommand(binaries.pgCtl, ["-D", dataDirectory, "status"]).run()
        switch status.status {
        case 0:
            let pidFile = PIDFile(dataDirectory: dataDirectory)
            if pidFile.belongsToForeignProcess {
                try pidFile.remove()
                return nil
            }
            return pidFile.port ?? port
        case 3:
            return nil
        default:
            throw ClusterError(
                .commandFailed,
                "pg_ctl status failed for \(dataDirectory)",
                exitStatus: status.status,
                output: status.outputTail
            )
        }
    }

    /// A command running a server program as the server's OS user, in the cluster directory.
    func serverCommand(_ program: String, _ arguments: [String]) -> Command {
        var command = serverUser?.command(program, arguments) ?? Command(executable: program, arguments: arguments)
        command.workingDirectory = directory
        return command
    }

    /// Creates `directory` and `socket/` (mode 0700) and, as root, gives them to the server's OS user.
    private func prepareDirectories() throws {
        let manager = FileManager.default
        do {
            let parent = URL(fileURLWithPath: directory).deletingLastPathComponent().path
            try manager.createDirectory(atPath: parent, withIntermediateDirectories: true)
            for path in [directory, socketDirectory] {
                if !manager.fileExists(atPath: path) {
                    try manager.createDirectory(atPath: path, withIntermediateDirectories: false)
                }
                try manager.setAttributes([.posixPermissions: 0o700], ofItemAtPath: path)
            }
        } catch {
            throw ClusterError(.invalidDirectory, "cannot create \(directory): \(error)")
        }
        guard let serverUser else {
            return
        }
        for path in [directory, socketDirectory, logFile] where manager.fileExists(atPath: path) {
            try serverUser.own(path)
        }
        let reach = serverUser.command("test", ["-w", directory, "-a", "-x", directory])
        guard try reach.run().status == 0 else {
            throw ClusterError(
                .invalidDirectory,
                "the \(serverUser.name) OS user cannot reach \(directory); make its parent directories "
                    + "searchable by others (chmod o+x) or choose another directory"
            )
        }
    }

    /// Checks what `init` cannot repair: the path's characters, the socket path's length, the port.
    private func validate() throws {
        let forbidden = Set("'\"$`\\\n\r\t")
        if directory.contains(where: { forbidden.contains($0) }) {
            throw ClusterError(
                .invalidDirectory,
                "\(directory) contains a quote, $, backquote, backslash or control character, which pg_ctl "
                    + "passes to /bin/sh unescaped; choose another directory"
            )
        }
        // sockaddr_un.sun_path holds 108 bytes including the terminating NUL.
        if (socketDirectory + "/.s.PGSQL.\(port)").utf8.count > 107 {
            throw ClusterError(
                .invalidDirectory,
                "\(socketDirectory) is too long for a unix socket path (107 bytes at most); choose a shorter directory"
            )
        }
        if !(1...65_535).contains(port) {
            throw ClusterError(.invalidPort, "port \(port) is not between 1 and 65535")
        }
    }
}
