import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A request as `ScriptedPeer` received it.
public struct PeerRequest: Sendable {
    /// The method, as sent (for example `GET`).
    public let method: String
    /// The request target, query string included (for example `/me?fields=id`).
    public let path: String
    /// The headers in the order received, names as sent.
    public let headers: [(String, String)]
    /// The body (read by `Content-Length`; empty without one).
    public let body: [UInt8]

    /// The value of the first header called `name`, compared case-insensitively.
    /// - Parameter name: the header name.
    /// - Returns: its value, or `nil`.
    public func header(_ name: String) -> String? {
        headers.first { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1
    }

    /// The body decoded as UTF-8.
    public var bodyText: String {
        String(decoding: body, as: UTF8.self)
    }
}

/// What `ScriptedPeer` does with one request.
public enum PeerAction: Sendable {
    /// Answers with a `Content-Length` body (added unless `headers` has one) and keeps the connection open.
    case respond(status: Int, headers: [(String, String)] = [], body: [UInt8] = [])
    /// Answers with `Transfer-Encoding: chunked` (no `Content-Length`) and keeps the connection open.
    case respondChunked(status: Int, headers: [(String, String)] = [], body: [UInt8] = [])
    /// Waits `seconds` (only this connection), then answers like `.respond`.
    case delayThenRespond(seconds: Double, status: Int, headers: [(String, String)] = [], body: [UInt8] = [])
    /// Closes the connection without a byte of response.
    case closeWithoutResponse
    /// Never answers; the connection stays open until the client closes it or the peer stops.
    case hang
    /// Announces `declaredLength` bytes, sends only `sent`, then closes.
    case partialBody(declaredLength: Int, sent: [UInt8])
    /// Answers `302 Found` with `Location: location` and an empty body.
    case redirect(to: String)

    /// `.respond` with a UTF-8 text body.
    /// - Parameters:
    ///   - text: the body.
    ///   - status: the status code; 200 by default.
    /// - Returns: the action.
    public static func text(_ text: String, status: Int = 200) -> PeerAction {
        .respond(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")], body: Array(text.utf8))
    }
}

/// Why a `ScriptedPeer` could not start.
public struct ScriptedPeerError: Error, CustomStringConvertible {
    /// The failed call and `strerror` text.
    public let description: String
}

/// An in-process HTTP/1.1 peer on raw POSIX sockets, answering each request as a script says. For tests only.
///
/// It listens on 127.0.0.1, port 0 (the kernel picks a free port). An accept thread hands each connection to its
/// own small-stack thread, which reads requests (keep-alive, `Content-Length` bodies, `Expect: 100-continue`)
/// and performs the script's `PeerAction`. Sleeping per connection is fine: this is the test peer, not the
/// system under test, and a thousand connections cost a thousand small threads.
///
/// Ownership: owns the listening socket (closed by `stop()` once the accept thread has exited) and every accepted
/// socket (each closed by its connection thread, never by another thread, so descriptor numbers cannot be reused
/// under a thread still using them). Call `stop()` when done: the threads keep the peer alive until then.
/// Thread safety: `state` guards the counters, the open-socket set and `stopped`; the script may be called on
/// many connection threads at once, so it must be `@Sendable`.
/// Sendable: the counters, the open-socket set and `stopped` are guarded by `state` (an `NSCondition`, not a
/// `Locked`: a delayed response sleeps on it until the peer stops), which the compiler cannot see.
public final class ScriptedPeer: @unchecked Sendable {
    /// The port it listens on.
    public let port: Int
    private let listener: Int32
    private let script: @Sendable (PeerRequest) -> PeerAction
    private let state = NSCondition()
    private let acceptExited = DispatchSemaphore(value: 0)
    private var stopped = false
    private var openSockets: Set<Int32> = []
    private var requests = 0
    private var connections = 0

    /// Starts listening and serving. Also raises this process's open-file soft limit to the hard limit, since
    /// tests open thousands of sockets.
    /// - Parameter script: decides the action for each request; called on connection threads.
    /// - Throws: `ScriptedPeerError` when the socket cannot be set up.
    public init(_ script: @escaping @Sendable (PeerRequest) -> PeerAction) throws {
        ScriptedPeer.raiseOpenFileLimit()
        let socketType = Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue)
        let listener = socket(AF_INET, socketType, 0)
        guard listener >= 0 else {
            throw ScriptedPeerError(description: "socket: \(ScriptedPeer.errnoText())")
        }
        var reuse: Int32 = 1
        _ = setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = in_addr_t(0x7f00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ready = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(listener, socketAddress, length) == 0 && listen(listener, 4096) == 0
                    && getsockname(listener, socketAddress, &length) == 0
            }
        }
        guard ready else {
            let text = ScriptedPeer.errnoText()
            close(listener)
            throw ScriptedPeerError(description: "bind/listen on 127.0.0.1: \(text)")
        }
        self.listener = listener
        self.port = Int(UInt16(bigEndian: address.sin_port))
        self.script = script
        let thread = Thread { [self] in
            acceptLoop()
        }
        thread.name = "ScriptedPeer.accept"
        thread.start()
    }

    deinit {
        stop()
    }

    /// `http://127.0.0.1:<port>`, without a trailing slash.
    public var baseURL: String {
        "http://127.0.0.1:\(port)"
    }

    /// Requests received so far (each parsed request counts, keep-alive or not).
    public var requestCount: Int { locked { requests } }

    /// Connections accepted so far.
    public var connectionCount: Int { locked { connections } }

    /// Connections open right now (accepted and not yet closed by either side).
    public var openConnectionCount: Int { locked { openSockets.count } }

    /// Stops listening, wakes every delayed or hanging connection and shuts every socket down. Idempotent.
    public func stop() {
        state.lock()
        guard !stopped else {
            state.unlock()
            return
        }
        stopped = true
        // Under the lock, so no connection thread can close (and the kernel reuse) one of these descriptors first.
        _ = shutdown(listener, Int32(SHUT_RDWR))
        for socket in openSockets {
            _ = shutdown(socket, Int32(SHUT_RDWR))
        }
        state.broadcast()
        state.unlock()
        acceptExited.wait()
        close(listener)
    }

    // MARK: Threads

    private func acceptLoop() {
        defer { acceptExited.signal() }
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                let error = errno
                if isStopped {
                    return
                }
                if error == EINTR || error == ECONNABORTED {
                    continue
                }
                if error == EMFILE || error == ENFILE {
                    usleep(10_000)
                    continue
                }
                return
            }
            state.lock()
            guard !stopped else {
                state.unlock()
                close(connection)
                return
            }
            openSockets.insert(connection)
            connections += 1
            state.unlock()
            let thread = Thread { [self] in
                serve(connection)
            }
            thread.stackSize = 256 * 1024
            thread.start()
        }
    }

    private func serve(_ connection: Int32) {
        defer {
            state.lock()
            openSockets.remove(connection)
            state.unlock()
            close(connection)
        }
        var buffer: [UInt8] = []
        while let request = readRequest(connection, &buffer) {
            locked { requests += 1 }
            guard perform(script(request), on: connection) else {
                return
            }
            if request.header("Connection")?.lowercased() == "close" {
                return
            }
        }
    }

    /// Performs `action`; returns whether the connection may serve another request.
    private func perform(_ action: PeerAction, on connection: Int32) -> Bool {
        switch action {
        case .respond(let status, let headers, let body):
            return sendAll(connection, ScriptedPeer.response(status, headers, body))
        case .respondChunked(let status, let headers, let body):
            return sendAll(connection, ScriptedPeer.chunkedResponse(status, headers, body))
        case .delayThenRespond(let seconds, let status, let headers, let body):
            guard sleep(seconds) else {
                return false
            }
            return sendAll(connection, ScriptedPeer.response(status, headers, body))
        case .closeWithoutResponse:
            return false
        case .hang:
            var discarded: [UInt8] = []
            while receive(connection, into: &discarded) {
                discarded.removeAll(keepingCapacity: true)
            }
            return false
        case .partialBody(let declaredLength, let sent):
            let head = ScriptedPeer.response(200, [("Content-Length", "\(declaredLength)")], [])
            _ = sendAll(connection, head + sent)
            return false
        case .redirect(let location):
            return sendAll(connection, ScriptedPeer.response(302, [("Location", location)], []))
        }
    }

    private var isStopped: Bool { locked { stopped } }

    private func locked<Value>(_ body: () -> Value) -> Value {
        state.lock()
        defer { state.unlock() }
        return body()
    }

    /// Sleeps `seconds` unless the peer stops first; returns `false` when it stopped.
    private func sleep(_ seconds: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        state.lock()
        defer { state.unlock() }
        while !stopped && Date() < deadline {
            _ = state.wait(until: deadline)
        }
        return !stopped
    }

    // MARK: HTTP/1.1

    private func readRequest(_ connection: Int32, _ buffer: inout [UInt8]) -> PeerRequest? {
        var headEnd = ScriptedPeer.endOfHead(in: buffer)
        while headEnd == nil {
            guard buffer.count < 1 << 20, receive(connection, into: &buffer) else {
                return nil
            }
            headEnd = ScriptedPeer.endOfHead(in: buffer)
        }
        guard let headEnd else { return nil }
        let lines = String(decoding: buffer[0..<headEnd], as: UTF8.self).components(separatedBy: "\r\n")
        let requestLine = lines[0].split(separator: " ")
        guard requestLine.count == 3 else {
            return nil
        }
        var headers: [(String, String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers.append((String(line[..<colon]), value))
        }
        let bodyStart = headEnd + 4
        let contentLength = headers.first { $0.0.lowercased() == "content-length" }.flatMap { Int($0.1) } ?? 0
        let expectsContinue = headers.contains { $0.0.lowercased() == "expect" && $0.1.lowercased() == "100-continue" }
        if expectsContinue && buffer.count < bodyStart + contentLength {
            guard sendAll(connection, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return nil }
        }
        while buffer.count < bodyStart + contentLength {
            guard receive(connection, into: &buffer) else { return nil }
        }
        let body = Array(buffer[bodyStart..<(bodyStart + contentLength)])
        buffer.removeFirst(bodyStart + contentLength)
        return PeerRequest(
            method: String(requestLine[0]), path: String(requestLine[1]), headers: headers, body: body
        )
    }

    private static func endOfHead(in buffer: [UInt8]) -> Int? {
        guard buffer.count >= 4 else { return nil }
        for index in 0...(buffer.count - 4)
        where buffer[index] == 13 && buffer[index + 1] == 10 && buffer[index + 2] == 13 && buffer[index + 3] == 10 {
            return index
        }
        return nil
    }

    private static func head(_ status: Int, _ headers: [(String, String)]) -> String {
        var text = "HTTP/1.1 \(status) \(reason(status))\r\n"
        for (name, value) in headers {
            text += "\(name): \(value)\r\n"
        }
        return text
    }

    private static func reason(_ status: Int) -> String {
        let reasons = [
            200: "OK", 201: "Created", 204: "No Content", 302: "Found", 304: "Not Modified", 404: "Not Found",
        ]
        return reasons[status] ?? "Status"
    }

    private static func response(_ status: Int, _ headers: [(String, String)], _ body: [UInt8]) -> [UInt8] {
        var text = head(status, headers)
        if !headers.contains(where: { $0.0.lowercased() == "content-length" }) {
            text += "Content-Length: \(body.count)\r\n"
        }
        return Array((text + "\r\n").utf8) + body
    }

    private static func chunkedResponse(_ status: Int, _ headers: [(String, String)], _ body: [UInt8]) -> [UInt8] {
        var bytes = Array((head(status, headers) + "Transfer-Encoding: chunked\r\n\r\n").utf8)
        var offset = 0
        while offset < body.count {
            let end = min(offset + 4096, body.count)
            bytes += Array("\(String(end - offset, radix: 16))\r\n".utf8) + body[offset..<end] + [13, 10]
            offset = end
        }
        return bytes + Array("0\r\n\r\n".utf8)
    }

    // MARK: Sockets

    private func receive(_ connection: Int32, into buffer: inout [UInt8]) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                buffer += chunk[0..<count]
                return true
            }
            if count < 0 && errno == EINTR {
                continue
            }
            return false
        }
    }

    private func sendAll(_ connection: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { raw in
                send(connection, raw.baseAddress.map { $0 + offset }, raw.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent < 0 && errno == EINTR {
                continue
            }
            guard sent > 0 else {
                return false
            }
            offset += sent
        }
        return true
    }

    private static func raiseOpenFileLimit() {
        var limit = rlimit()
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        if getrlimit(resource, &limit) == 0 && limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(resource, &limit)
        }
    }

    private static func errnoText() -> String {
        String(cString: strerror(errno))
    }
}
