import Foundation

/// A bound, listening TCP socket, the one from which the server makes each loop's duplicate.
///
/// Ownership: ours; `deinit` closes it. Each duplicate belongs to its daemon (``ListeningSocket``).
final class ListenSocket {
    let descriptor: Int32
    let port: Int

    init(host: String, port: Int, backlog: Int) throws {
        var address = sockaddr_storage()
        var length: socklen_t
        let family: Int32
        let name = host == "localhost" ? "127.0.0.1" : host
        if name.hasPrefix("[") && name.hasSuffix("]") {
            family = AF_INET6
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            sin6.sin6_port = in_port_t(UInt16(port).bigEndian)
            guard inet_pton(AF_INET6, String(name.dropFirst().dropLast()), &sin6.sin6_addr) == 1 else {
                throw ServerError(.invalidAddress, host)
            }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            withUnsafeMutableBytes(of: &address) { $0.storeBytes(of: sin6, as: sockaddr_in6.self) }
        } else {
            family = AF_INET
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = in_port_t(UInt16(port).bigEndian)
            guard inet_pton(AF_INET, name, &sin.sin_addr) == 1 else {
                throw ServerError(.invalidAddress, host)
            }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            withUnsafeMutableBytes(of: &address) { $0.storeBytes(of: sin, as: sockaddr_in.self) }
        }
        guard (0...65535).contains(port) else { throw ServerError(.invalidAddress, "port \(port)") }

        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ServerError(.bindFailed, String(cString: strerror(errno))) }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0, listen(fd, Int32(backlog)) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw ServerError(.bindFailed, "\(host):\(port): \(reason)")
        }
        var actual = sockaddr_storage()
        var actualLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &actualLength) }
        }
        let portBigEndian = withUnsafeBytes(of: &actual) { raw -> UInt16 in
            family == AF_INET6
                ? raw.load(as: sockaddr_in6.self).sin6_port : raw.load(as: sockaddr_in.self).sin_port
        }
        self.descriptor = fd
        self.port = Int(UInt16(bigEndian: portBigEndian))
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }
}

/// A descriptor of the listening socket and the socket it named when recorded (`fstat`'s device and inode), to tell
/// later whether the number still names that socket.
///
/// A number closed by mistake elsewhere in the process, or closed and reused, must never be closed again here: that
/// would close whatever another thread opened under it. libmicrohttpd closes a daemon's socket itself when the
/// daemon was never quiesced, and aborts when that close fails (docs/hostile-input.md, bug 10).
struct ListeningSocket: Sendable {
    let descriptor: Int32
    private let device: UInt64
    private let inode: UInt64

    /// Records what `descriptor` names now; nil when it names nothing.
    init?(_ descriptor: Int32) {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return nil }
        self.descriptor = descriptor
        device = UInt64(status.st_dev)
        inode = UInt64(status.st_ino)
    }

    /// Whether the number still names the socket it named when recorded.
    var isStillOurs: Bool {
        var status = stat()
        return fstat(descriptor, &status) == 0 && UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }
}
