import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Cluster {
    /// The server's processes: the postmaster (from `postmaster.pid`) and its children (backends, background
    /// workers), found through `/proc`. Empty when the server is not running. Linux only.
    ///
    /// - Returns: Process ids, the postmaster first.
    public func serverProcessIDs() -> [Int32] {
        guard let postmaster = PIDFile(dataDirectory: dataDirectory).processID, kill(postmaster, 0) == 0 else {
            return []
        }
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        let children = entries.compactMap(Int32.init).filter { Self.parent(of: $0) == postmaster }
        return [postmaster] + children.sorted()
    }

    /// Stops every server process with SIGSTOP: the server freezes as a host that hangs does, with its sockets
    /// open (the kernel still accepts new connections into the listen backlog), answering nothing. For fault
    /// tests; ``thaw()`` lets it go on. Processes forked while frozen cannot exist: the postmaster is stopped.
    ///
    /// - Returns: The processes stopped.
    @discardableResult
    public func freeze() -> [Int32] {
        let processes = serverProcessIDs()
        for process in processes {
            kill(process, SIGSTOP)
        }
        return processes
    }

    /// Sends SIGCONT to every server process (after ``freeze()``, or to one backend stopped by hand).
    public func thaw() {
        for process in serverProcessIDs() {
            kill(process, SIGCONT)
        }
    }

    /// The parent process id of `process`, from `/proc/<pid>/stat`, or nil.
    private static func parent(of process: Int32) -> Int32? {
        guard let stat = try? String(contentsOfFile: "/proc/\(process)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return nil }
        // After "pid (comm)": state, then the parent's id.
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        return fields.count > 1 ? Int32(fields[1]) : nil
    }
}
