import Foundation
import Support

#if canImport(Glibc)
    import Glibc
#endif

/// A slowloris server: it reads a request, then sends its answer one byte every `interval` seconds and never
/// finishes (the body is announced longer than it will ever be). For the client's timeout tests only.
///
/// Ownership: owns the listening socket and each accepted socket; `stop()` shuts them down and waits for the accept
/// thread. Thread safety: `state` holds `stopped` and the socket set under its lock.
final class TricklePeer: Sendable {
    let port: Int
    private let listener: Int32
    private let interval: Double
    private struct State {
        var stopped = false
        var sockets: Set<Int32> = []
    }
    private let state = Locked(State())
    private let acceptDone = DispatchSemaphore(value: 0)

    init(interval: Double = 0.05) throws {
        self.interval = interval
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = in_addr_t(0x7f00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ready = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 64) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        guard listener >= 0, ready else {
            close(listener)
            throw ScriptError.setup
        }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    enum ScriptError: Error {
        case setup
    }

    /// `http://127.0.0.1:<port>`.
    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Stops accepting and shuts every connection down. Idempotent.
    func stop() {
        let first: Bool = state.withLock { state in
            defer { state.stopped = true }
            guard !state.stopped else { return false }
            _ = shutdown(listener, Int32(SHUT_RDWR))
            for socket in state.sockets {
                _ = shutdown(socket, Int32(SHUT_RDWR))
            }
            return true
        }
        if first {
            acceptDone.wait()
            close(listener)
        }
    }

    private var isStopped: Bool { state.withLock { $0.stopped } }

    private func acceptLoop() {
        defer { acceptDone.signal() }
        while !isStopped {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else {
                if isStopped { return }
                continue
            }
            let accepted: Bool = state.withLock { state in
                guard !state.stopped else { return false }
                state.sockets.insert(connection)
                return true
            }
            guard accepted else {
                close(connection)
                return
            }
            let thread = Thread { [self] in trickle(connection) }
            thread.stackSize = 256 * 1024
            thread.start()
        }
    }

    private func trickle(_ connection: Int32) {
        defer {
            state.withLock { _ = $0.sockets.remove(connection) }
            close(connection)
        }
        var buffer = [UInt8](repeating: 0, count: 4096)
        var received: [UInt8] = []
        while !received.contains(13) || !String(decoding: received, as: UTF8.self).contains("\r\n\r\n") {
            let count = recv(connection, &buffer, buffer.count, 0)
            guard count > 0 else { return }
            received += buffer[0..<count]
        }
        let answer =
            Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{".utf8)
            + [UInt8](repeating: UInt8(ascii: " "), count: 100_000)
        for byte in answer {
            guard !isStopped, send(connection, [byte], 1, Int32(MSG_NOSIGNAL)) == 1 else { return }
            Thread.sleep(forTimeInterval: interval)
        }
    }
}
