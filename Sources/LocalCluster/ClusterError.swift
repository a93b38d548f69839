import Foundation

/// An error from managing a local PostgreSQL cluster.
///
/// Carries what a person needs to fix the problem: the command that failed, its exit status, the tail of
/// its output and, for server start-up problems, the server log's path and tail. Nothing secret can be in
/// it: local clusters use trust authentication on loopback and have no passwords.
public struct ClusterError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. Compare with the static constants; new kinds may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case binariesNotFound = "binaries_not_found"
            case commandFailed = "command_failed"
            case timedOut = "timed_out"
            case invalidName = "invalid_name"
            case invalidDirectory = "invalid_directory"
            case notInitialized = "not_initialized"
            case portConflict = "port_conflict"
            case invalidPort = "invalid_port"
            case systemUser = "system_user"
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// No PostgreSQL server binaries were found.
        public static let binariesNotFound = Code(.binariesNotFound)
        /// A PostgreSQL program (or `runuser`) exited unsuccessfully or could not be launched.
        public static let commandFailed = Code(.commandFailed)
        /// Something did not finish within its timeout.
        public static let timedOut = Code(.timedOut)
        /// A database name did not match `[a-z0-9_]+` (at most 63 bytes).
        public static let invalidName = Code(.invalidName)
        /// The cluster directory cannot be used (bad characters, not reachable, half-initialized).
        public static let invalidDirectory = Code(.invalidDirectory)
        /// The cluster has no data directory yet; call `initializeIfNeeded()` first.
        public static let notInitialized = Code(.notInitialized)
        /// The cluster is already running on another port.
        public static let portConflict = Code(.portConflict)
        /// The port is not between 1 and 65535.
        public static let invalidPort = Code(.invalidPort)
        /// Running as root, but the `postgres` OS user is missing or unusable.
        public static let systemUser = Code(.systemUser)

        /// The snake_case name of the code.
        public var description: String { base.rawValue }
    }

    /// What kind of failure this is.
    public let code: Code
    /// A one-line human explanation.
    public let message: String
    /// The command line that failed, if a command failed.
    public let command: String?
    /// The command's exit status, if it ran to the end.
    public let exitStatus: Int32?
    /// The last lines of the command's standard error (or output, when standard error was empty).
    public let output: String?
    /// The server log file that may explain a start-up failure.
    public let logFile: String?
    /// The last lines of that log file, when it could be read.
    public let logTail: String?

    /// Creates an error.
    /// - Parameters:
    ///   - code: what kind of failure this is.
    ///   - message: a one-line human explanation.
    ///   - command: the command line that failed.
    ///   - exitStatus: its exit status.
    ///   - output: the tail of its output.
    ///   - logFile: the server log that may explain the failure.
    ///   - logTail: the last lines of that log.
    public init(
        _ code: Code,
        _ message: String,
        command: String? = nil,
        exitStatus: Int32? = nil,
        output: String? = nil,
        logFile: String? = nil,
        logTail: String? = nil
    ) {
        self.code = code
        self.message = message
        self.command = command
        self.exitStatus = exitStatus
        self.output = output
        self.logFile = logFile
        self.logTail = logTail
    }

    /// A multi-line explanation: the message, then the command, its status and output, then the log.
    public var description: String {
        var lines = [message]
        if let command {
            lines.append("command: \(command)")
        }
        if let exitStatus {
            lines.append("exit status: \(exitStatus)")
        }
        if let output, !output.isEmpty {
            lines.append("output:\n\(output)")
        }
        if let logFile {
            lines.append("server log: \(logFile)")
        }
        if let logTail, !logTail.isEmpty {
            lines.append("server log tail:\n\(logTail)")
        }
        return lines.joined(separator: "\n")
    }
}

extension String {
    /// The last `maxLines` lines of the text (and at most `maxCharacters` characters), trimmed.
    func tail(lines maxLines: Int = 20, characters maxCharacters: Int = 4000) -> String {
        let trimmed = trimmingCharacters(in: .whitespacesAndNewlines)
        var lines = trimmed.split(separator: "\n", omittingEmptySubsequences: false)
        if lines.count > maxLines {
            lines = Array(lines.suffix(maxLines))
        }
        let joined = lines.joined(separator: "\n")
        return joined.count > maxCharacters ? String(joined.suffix(maxCharacters)) : joined
    }
}
