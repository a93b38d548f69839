import Foundation

/// A blocking TCP client for tests that must send exactly the bytes they choose: malformed heads, bodies that
/// lie about their length, slow or half-closed clients.
///
/// Ownership: owns one socket, closed by ``close()`` or `deinit`. Thread safety: one thread at a time.
public final class RawConnection {
    /// A parsed HTTP/1.1 response.
    public struct Reply: Sendable {
        /// The status code.
        public let status: Int
        /// Header fields with lowercased names.
        public let headers: [String: String]
        /// The body.
        public let body: [UInt8]
        /// The body as UTF-8 text.
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// Errors of the raw client.
    public enum Failure: Error {
        /// Connecting failed.
        case connect(Int32)
        /// The peer closed or timed out before a whole response arrived.
        case incomplete(String)
    }

    private var descriptor: Int32
    private var buffer: [UInt8] = []

    /// Connects to `127.0.0.1:port`, with `timeout` seconds for each read.
    public init(port: Int, timeout: Double = 5) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            Glibc.close(fd)
            throw Failure.connect(code)
        }
        var interval = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
        descriptor = fd
    }

    /// Sends bytes; returns false when the peer has closed.
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    /// Sends text as UTF-8.
    @discardableResult
    public func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Closes the sending side only (a half-closed client).
    public func shutdownWrite() { Glibc.shutdown(descriptor, Int32(SHUT_WR)) }

    /// Reads one response (by Content-Length, else until the peer closes).
    public func readReply() throws -> Reply {
        while true {
            if let end = headEnd() {
                let headText = String(decoding: buffer[..<end], as: UTF8.self)
                var lines = headText.components(separatedBy: "\r\n")
                let statusLine = lines.removeFirst()
                let parts = statusLine.split(separator: " ")
                guard parts.count >= 2, let status = Int(parts[1]) else { throw Failure.incomplete(statusLine) }
                var headers: [String: String] = [:]
                for line in lines {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers[line[..<colon].lowercased()] = line[line.index(after: colon)...]
                        .trimmingCharacters(in: .whitespaces)
                }
                let bodyStart = end + 4
                if let length = headers["content-length"].flatMap(Int.init) {
                    while buffer.count < bodyStart + length {
                        guard fill() else { throw Failure.incomplete("body") }
                    }
                    let body = Array(buffer[bodyStart..<bodyStart + length])
                    buffer.removeFirst(bodyStart + length)
                    return Reply(status: status, headers: headers, body: body)
                }
                while fill() {}
                let body = Array(buffer[bodyStart...])
                buffer.removeAll()
                return Reply(status: status, headers: headers, body: body)
            }
            guard fill() else { throw Failure.incomplete("head") }
        }
    }

    /// Whether the peer has closed the connection (reads end of stream within the timeout).
    public func peerClosed() -> Bool {
        var byte: UInt8 = 0
        return recv(descriptor, &byte, 1, 0) == 0
    }

    /// Closes the socket; idempotent.
    public func close() {
        if descriptor >= 0 {
            Glibc.close(descriptor)
            descriptor = -1
        }
    }

    deinit { close() }

    private func headEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for index in 0...(buffer.count - 4)
        where buffer[index] == 13 && buffer[index + 1] == 10 && buffer[index + 2] == 13 && buffer[index + 3] == 10 {
            return index
        }
        return nil
    }

    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return false }
        buffer.append(contentsOf: chunk[..<count])
        return true
    }
}
