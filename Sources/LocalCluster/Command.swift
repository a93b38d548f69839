import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One program run to completion (see `ChildProcess`), its output captured in temporary files.
///
/// Output goes to files rather than pipes on purpose: `pg_ctl start` leaves a daemon behind, and a pipe the
/// daemon held would never reach its end.
struct Command {
    /// The result of a finished command.
    struct Result {
        /// The exit status (or the signal number, when killed by a signal).
        var status: Int32
        /// Everything the command wrote to standard output.
        var standardOutput: String
        /// Everything the command wrote to standard error.
        var standardError: String

        /// Standard error's tail, or standard output's when standard error is empty.
        var outputTail: String {
            let error = standardError.tail()
            return error.isEmpty ? standardOutput.tail() : error
        }
    }

    /// The program to run: an absolute path.
    var executable: String
    /// Its arguments, passed as they are (no shell).
    var arguments: [String]
    /// The directory it runs in, if not the current one.
    var workingDirectory: String?
    /// How long it may run before it is killed.
    var timeout: Duration = .seconds(120)

    /// The command line, shell-quoted where needed, for error messages.
    var commandLine: String {
        ([executable] + arguments).map(Command.shellQuoted).joined(separator: " ")
    }

    /// Runs the command and waits for it.
    /// - Returns: the exit status and output, whatever the status.
    /// - Throws: `ClusterError.commandFailed` when it cannot be launched, `.timedOut` when it overruns.
    func run() throws -> Result {
        let scratch = FileManager.default.temporaryDirectory.path
        let outputPath = "\(scratch)/localcluster-\(UUID().uuidString).out"
        let errorPath = "\(scratch)/localcluster-\(UUID().uuidString).err"
        let outputFile = open(outputPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        let errorFile = open(errorPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        defer {
            for descriptor in [outputFile, errorFile] where descriptor >= 0 {
                close(descriptor)
            }
            unlink(outputPath)
            unlink(errorPath)
        }
        guard outputFile >= 0, errorFile >= 0 else {
            throw ClusterError(.commandFailed, "cannot create output files in \(scratch)", command: commandLine)
        }

        let child: ChildProcess
        do {
            child = try ChildProcess.spawn(
                executable: executable,
                arguments: arguments,
                environment: Command.environment(),
                workingDirectory: workingDirectory,
                output: outputFile,
                error: errorFile
            )
        } catch {
            throw ClusterError(.commandFailed, "cannot launch \(executable): \(error.reason)", command: commandLine)
        }

        guard let status = child.wait(timeout: timeout) else {
            child.send(SIGTERM)
            if child.wait(timeout: .seconds(5)) == nil {
                child.send(SIGKILL)
                _ = child.wait(timeout: nil)
            }
            throw ClusterError(
                .timedOut,
                "\(URL(fileURLWithPath: executable).lastPathComponent) did not finish within \(timeout)",
                command: commandLine,
                output: Command.read(errorPath).tail()
            )
        }
        return Result(
            status: status,
            standardOutput: Command.read(outputPath),
            standardError: Command.read(errorPath)
        )
    }

    /// Runs the command and requires exit status 0.
    /// - Parameters:
    ///   - failure: the message of the error thrown on a non-zero status.
    ///   - logFile: a server log to point at (and quote the tail of) in that error.
    /// - Returns: the result of the successful run.
    /// - Throws: `ClusterError` when the command fails, cannot start, or times out.
    @discardableResult
    func check(_ failure: String, logFile: String? = nil) throws -> Result {
        let result = try run()
        guard result.status == 0 else {
            throw ClusterError(
                .commandFailed,
                failure,
                command: commandLine,
                exitStatus: result.status,
                output: result.outputTail,
                logFile: logFile,
                logTail: logFile.map { Command.read($0).tail(lines: 15) }
            )
        }
        return result
    }

    /// The environment for PostgreSQL programs: ours, without `PG*` variables that could redirect them
    /// (`PGHOST`, `PGDATA`, `PGOPTIONS`, ...), and with the C locale so their messages are predictable.
    static func environment() -> [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PG") }
        environment["LC_ALL"] = "C"
        return environment
    }

    /// The text of a file, or "" when it cannot be read.
    static func read(_ path: String) -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            return ""
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// `text` quoted for a POSIX shell when it holds anything but safe characters.
    static func shellQuoted(_ text: String) -> String {
        let safe = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@,+%")
        if !text.isEmpty, text.allSatisfy({ safe.contains($0) }) {
            return text
        }
        return "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// The first executable file named `name` in the directories of `searchPath` (this process's `PATH`
    /// when nil).
    static func findInPath(_ name: String, searchPath: String? = nil) -> String? {
        let path = searchPath ?? ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") where !directory.isEmpty {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) {
                return candidate
            }
        }
        return nil
    }
}

extension Duration {
    /// The duration in seconds, for Dispatch and Foundation APIs.
    var timeInterval: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
