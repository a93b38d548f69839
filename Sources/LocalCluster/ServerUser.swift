import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The OS user that runs `initdb` and `pg_ctl` when this process is root (they refuse to run as root).
///
/// When the process is not root there is no such user: the programs run as the current user.
struct ServerUser: Sendable, Hashable {
    /// The user name, `postgres`.
    let name: String
    /// Its numeric user id.
    let uid: UInt32
    /// Its primary group id.
    let gid: UInt32
    /// The path of `runuser`, which switches to the user without a password.
    let runuser: String

    /// The user to switch to, or nil when this process is not root.
    /// - Throws: `ClusterError.systemUser` when root but the user or `runuser` is missing.
    static func forCurrentProcess(name: String = "postgres") throws -> ServerUser? {
        guard geteuid() == 0 else {
            return nil
        }
        guard let (uid, gid) = lookUp(name) else {
            throw ClusterError(
                .systemUser,
                "running as root, but there is no `\(name)` OS user to run the PostgreSQL server as; "
                    + "install the Debian package postgresql-15 (it creates the user) or run as a non-root user"
            )
        }
        let candidates = [Command.findInPath("runuser"), "/usr/sbin/runuser", "/sbin/runuser"]
        guard let runuser = candidates.compactMap({ $0 }).first(where: FileManager.default.isExecutableFile)
        else {
            throw ClusterError(
                .systemUser,
                "running as root, but `runuser` (package util-linux) was not found to switch to `\(name)`"
            )
        }
        return ServerUser(name: name, uid: uid, gid: gid, runuser: runuser)
    }

    /// The uid and gid of `name`, from the password database.
    private static func lookUp(_ name: String) -> (UInt32, UInt32)? {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        let status = getpwnam_r(name, &entry, &buffer, buffer.count, &found)
        guard status == 0, found != nil else {
            return nil
        }
        return (UInt32(entry.pw_uid), UInt32(entry.pw_gid))
    }

    /// A command that runs `program` as this user.
    func command(_ program: String, _ arguments: [String]) -> Command {
        Command(executable: runuser, arguments: ["-u", name, "--", program] + arguments)
    }

    /// Makes this user the owner of `path` (not recursive).
    /// - Throws: `ClusterError.invalidDirectory` when `chown` fails.
    func own(_ path: String) throws {
        guard chown(path, uid_t(uid), gid_t(gid)) == 0 else {
            let reason = String(cString: strerror(errno))
            throw ClusterError(.invalidDirectory, "cannot chown \(path) to \(name): \(reason)")
        }
    }
}
