import Foundation

/// The server's `postmaster.pid` lock file: line 1 is the process id, line 4 the port.
struct PIDFile {
    /// The file's path.
    let path: String

    /// The lock file of the cluster in `dataDirectory`.
    init(dataDirectory: String) {
        path = dataDirectory + "/postmaster.pid"
    }

    /// The file's lines, empty when it does not exist.
    private var lines: [Substring] {
        Command.read(path).split(separator: "\n", omittingEmptySubsequences: false)
    }

    /// The server's process id, if the file names one.
    var processID: Int32? {
        lines.first.flatMap { Int32($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// The server's TCP port, if the file names one.
    var port: Int? {
        let lines = lines
        return lines.count > 3 ? Int(lines[3].trimmingCharacters(in: .whitespaces)) : nil
    }

    /// Whether the file names a live process that is not a PostgreSQL server: a lock file left by a crash
    /// whose process id was reused (after a reboot, or in a container). Only answerable where `/proc` exists.
    var belongsToForeignProcess: Bool {
        guard let processID,
            let name = try? String(contentsOfFile: "/proc/\(processID)/comm", encoding: .utf8)
        else {
            return false
        }
        let command = name.trimmingCharacters(in: .whitespacesAndNewlines)
        return command != "postgres" && command != "postmaster"
    }

    /// Deletes the file.
    /// - Throws: `ClusterError.invalidDirectory` when it cannot be deleted.
    func remove() throws {
        do {
            try FileManager.default.removeItem(atPath: path)
        } catch {
            throw ClusterError(.invalidDirectory, "cannot remove the stale lock file \(path): \(error)")
        }
    }
}
