import Foundation
import HTTPServer
import Support
import Testing
import TestSupport

/// A handler with a few fixed routes, used to drive the server through real sockets.
private struct DemoHandler: RequestHandler {
    let records = RecordLog()

    func inspect(_ head: RequestHead) -> HeadDecision {
        switch (head.method, head.path) {
        case ("GET", "/hello"), ("POST", "/echo"), ("GET", "/slow"), ("GET", "/never"), ("GET", "/raw%2Fpath"),
            ("GET", "/at-once"), ("GET", "/foreign"), ("GET", "/big"), ("GET", "/reaped"), ("GET", "/parked"),
            ("GET", "/parked-at-once"), ("GET", "/parked-then-later"), ("GET", "/parked-never"), ("GET", "/parked-late"):
            return .proceed(route: head.path, respond: respond)
        default:
            return .reject(.error(status: 404, code: "not_found", message: "No such route."), route: nil)
        }
    }

    func respond(to request: Request) -> Reply {
        switch request.path {
        case "/hello":
            return .now(.json(status: 200, body: Array(#"{"hello":"world"}"#.utf8)))
        case "/echo":
            return .now(Response(status: 200, headers: ["Content-Type": "application/octet-stream"], body: request.body))
        case "/slow":
            return .later {
                try? await Task.sleep(nanoseconds: 1_000_000_000)
                return .json(status: 200, body: Array(#"{"slow":true}"#.utf8))
            }
        case "/big":
            // Long enough to be handed to libmicrohttpd without a copy (ServerCore.zeroCopyThreshold).
            return .later { Response(status: 200, headers: ["Content-Type": "application/octet-stream"], body: bigBody) }
        case "/at-once":
            // A waiting handler that never suspends: its task finishes inside the access handler call that
            // suspended the connection (handler tasks run inline, InlineTaskExecutor).
            return .later { .json(status: 200, body: Array(#"{"at_once":true}"#.utf8)) }
        case "/foreign":
            // Resumed from a thread the server does not know: the rest of the handler runs there.
            return .later {
                let value = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
                    Thread.detachNewThread {
                        Thread.sleep(forTimeInterval: 0.002)
                        continuation.resume(returning: 7)
                    }
                }
                return .json(status: 200, body: Array(#"{"foreign":\#(value)}"#.utf8))
            }
        case "/reaped":
            // Past the handler timeout the reaper cancels this task; `Task.sleep` resumes it from its cancellation
            // handler, inside the reaper's `cancel()`. What follows opens and closes cancellation scopes, which must
            // not happen while `cancel()` walks them (InlineTaskExecutor).
            return .later {
                try? await Task.sleep(nanoseconds: 30_000_000_000)
                for _ in 0..<20 {
                    await withTaskCancellationHandler { await Task.yield() } onCancel: {}
                }
                return .json(status: 200, body: [])
            }
        case "/parked":
            // Parked with no task, woken from a thread the server does not know; the rest runs on the server's.
            return .parked { wake in
                Thread.detachNewThread {
                    Thread.sleep(forTimeInterval: 0.002)
                    wake { .now(.json(status: 200, body: Array(#"{"parked":true}"#.utf8))) }
                }
            }
        case "/parked-at-once":
            // Woken before `park` returns (a cache that cannot vouch for itself answers at once).
            return .parked { wake in wake { .now(.json(status: 200, body: Array(#"{"parked":"at once"}"#.utf8))) } }
        case "/parked-then-later":
            // Woken, then waiting work after all (a cache miss).
            return .parked { wake in
                DispatchQueue.global().async {
                    wake {
                        .later {
                            try? await Task.sleep(nanoseconds: 1_000_000)
                            return .json(status: 200, body: Array(#"{"parked":"then later"}"#.utf8))
                        }
                    }
                }
            }
        case "/parked-never":
            return .parked { _ in }
        case "/parked-late":
            // Woken long after the handler timeout: the wake must do nothing.
            return .parked { wake in
                DispatchQueue.global().asyncAfter(deadline: .now() + 0.6) {
                    wake { .now(.json(status: 200, body: [])) }
                }
            }
        case "/never":
            return .later {
                try? await Task.sleep(nanoseconds: 30_000_000_000)
                return .json(status: 200, body: [])
            }
        default:
            return .now(Response(status: 200, body: Array((request.head.path + "?" + request.head.rawQuery).utf8)))
        }
    }

    func completed(_ record: ExchangeRecord) {
        records.append(record)
    }
}

/// A body well past the zero-copy threshold, with a pattern that shows any misplaced byte.
private let bigBody: [UInt8] = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 % 251) }

/// Sends `rounds` GETs on each of `clients` kept-alive connections at once (`path(client, round)`), and returns
/// a line for every reply `isRight` refuses and every connection that failed.
private func exchangeConcurrently(
    port: Int, clients: Int, rounds: Int, path: @Sendable (Int, Int) -> String,
    isRight: @Sendable (String, RawConnection.Reply) -> Bool
) -> [String] {
    let lines = Locked<[String]>([])
    DispatchQueue.concurrentPerform(iterations: clients) { client in
        do {
            let connection = try RawConnection(port: port)
            for round in 0..<rounds {
                let target = path(client, round)
                connection.send(get(target))
                let reply = try connection.readReply()
                if !isRight(target, reply) { lines.withLock { $0.append("\(target): \(reply.status)") } }
            }
        } catch {
            lines.withLock { $0.append("client \(client): \(error)") }
        }
    }
    return lines.withLock { $0 }
}

/// Exchange records gathered from the server's threads.
private final class RecordLog: Sendable {
    private let records = Locked<[ExchangeRecord]>([])
    func append(_ record: ExchangeRecord) { records.withLock { $0.append(record) } }
    var all: [ExchangeRecord] { records.withLock { $0 } }
}

private func makeServer(_ adjust: (inout ServerConfiguration) -> Void = { _ in }) throws -> (Server, DemoHandler) {
    var configuration = ServerConfiguration()
    configuration.port = 0
    adjust(&configuration)
    let handler = DemoHandler()
    return (try Server(configuration: configuration, handler: handler), handler)
}

private func get(_ path: String, headers: String = "") -> String {
    "GET \(path) HTTP/1.1\r\nHost: localhost\r\n\(headers)\r\n"
}

@Suite("HTTP server over real sockets")
struct ServerTests {
    @Test func answersAndKeepsAlive() async throws {
        try await onThread {
            let (server, _) = try makeServer()
            defer { server.shutdown() }
            let connection = try RawConnection(port: server.port)
            for _ in 0..<3 {
                connection.send(get("/hello"))
                let reply = try connection.readReply()
                #expect(reply.status == 200)
                #expect(reply.text == #"{"hello":"world"}"#)
                #expect(reply.headers["content-type"] == "application/json")
            }
        }
    }

    /// Waiting handlers run inline (InlineTaskExecutor): one that finishes before it ever suspends, and one resumed
    /// from a foreign thread, each answered on kept-alive connections used from several threads at once.
    @Test func waitingHandlersFinishWhereverTheyResume() async throws {
        try await onThread {
            let (server, _) = try makeServer()
            defer { server.shutdown() }
            let failures = exchangeConcurrently(port: server.port, clients: 6, rounds: 20) { client, round in
                (client + round) % 2 == 0 ? "/at-once" : "/foreign"
            } isRight: { path, reply in
                reply.status == 200 && reply.text == (path == "/at-once" ? #"{"at_once":true}"# : #"{"foreign":7}"#)
            }
            #expect(failures.isEmpty, "\(failures)")
        }
    }

    /// Long bodies are lent to libmicrohttpd (no copy) and released when it is done: every byte arrives, on
    /// several connections at once, many times over.
    @Test func longBodiesArriveIntactWithoutACopy() async throws {
        try await onThread {
            let (server, _) = try makeServer()
            defer { server.shutdown() }
            let failures = exchangeConcurrently(port: server.port, clients: 4, rounds: 10) { _, _ in "/big" } isRight: {
                _, reply in reply.status == 200 && reply.body == bigBody
            }
            #expect(failures.isEmpty, "\(failures)")
        }
    }

    @Test func requestIDIsTakenWhenWellFormedAndMadeOtherwise() async throws {
        try await onThread {
            let (server, _) = try makeServer()
            defer { server.shutdown() }
            let connection = try RawConnection(port: server.port)
            connection.send(get("/hello", headers: "X-Request-Id: abc-123.x\r\n"))
            #expect(try connection.readReply().headers["x-request-id"] == "abc-123.x")
            connection.send(get("/hello", headers: "X-Request-Id: bad id with spaces\r\n"))
            let made = try connection.readReply().headers["x-request-id"] ?? ""
            #expect(made.count == 32 && made.allSatisfy(\.isHexDigit))
            connection.send(get("/nowhere"))
            let missing = try connection.readReply()
            #expect(missing.status == 404)
            #expect(missing.headers["x-request-id"]?.count == 32)
            #expect(missing.text.contains(#""code":"not_found""#))
        }
    }

    @Test func pathIsPassedStillPercentEncoded() async throws {
        try await onThread {
            let (server, _) = try makeServer()
            defer { server.shutdown() }
            let connection = try RawConnection(port: server.port)
            connection.send(get("/raw%2Fpath?a=b%20c&d"))
            #expect(try connection.readReply().text == "/raw%2Fpath?a=b%20c&d")
        }
    }

    @Test func bodyIsEchoedAndLimitGives413() async throws {
        try await onThread {
            let (server, _) = try makeServer { $0.maxBodyBytes = 1024 }
            defer { server.shutdown() }
            let connection = try RawConnection(port: server.port)
            let body = String(repeating: "x", count: 1024)
            connection.send("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 1024\r\n\r\n" + body)
            #expect(try connection.readReply().text == body)

            let declared = try RawConnection(port: server.port)
            declared.send("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 1025\r\n\r\n")
            let tooBig = try declared.readReply()
            #expect(tooBig.status == 413)
            #expect(tooBig.text.contains(#""code":"payload_too_large""#))

            let chunked = try RawConnection(port: server.port)
            let chunk = String(repeating: "y", count: 800)
            chunked.send(
                "POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + "320\r\n\(chunk)\r\n320\r\n\(chunk)\r\n0\r\n\r\n")
            #expect(try chunked.readReply().status == 413)
        }
    }

    @Test func oversizedHeadsGet431() async throws {
        try await onThread {
            let (server, _) = try makeServer { $0.maxHeaderBytes = 4096 }
            defer { server.shutdown() }
            let connection = try RawConnection(port: server.port)
            connection.send(get("/hello", headers: "X-Big: \(String(repeating: "a", count: 8000))\r\n"))
            let reply = try connection.readReply()
            #expect(reply.status == 431)
            #expect(reply.text.contains(#""code":"headers_too_large""#))

            let huge = try RawConnection(port: server.port)
            huge.send(get("/hello", headers: "X-Huge: \(String(repeating: "a", count: 200_000))\r\n"))
            #expect(try huge.readReply().status == 431)
        }
    }

    @Test func headsUpToTheDefaultLimitAreAnsweredAndLargerOnesGetTheContract431() async throws {
        // The default per-connection memory (connectionMemoryLimit) must hold a head of maxHeaderBytes, as one
        // large field or as maxHeaderFields smaller ones, and still answer a head a little over it in the
        // contract's shape.
        try await onThread {
            let (server, _) = try makeServer()
            defer { server.shutdown() }
            let limit = ServerConfiguration().maxHeaderBytes
            let large = try RawConnection(port: server.port)
            large.send(get("/hello", headers: "X-Big: \(String(repeating: "a", count: limit - 200))\r\n"))
            #expect(try large.readReply().status == 200)
            // Keep-alive on the same connection after the large head.
            large.send(get("/hello"))
            #expect(try large.readReply().status == 200)

            let many = try RawConnection(port: server.port)
            // 100 fields (the documented count) filling the head up to the limit.
            let fieldCount = ServerConfiguration.maxHeaderFields
            let fields = (0..<fieldCount).map {
                "X-F\($0): \(String(repeating: "b", count: limit / fieldCount - 16))\r\n"
            }.joined()
            #expect(fields.utf8.count < limit - 100)
            many.send(get("/hello", headers: fields))
            #expect(try many.readReply().status == 200)

            let over = try RawConnection(port: server.port)
            over.send(get("/hello", headers: "X-Big: \(String(repeating: "a", count: limit + 1000))\r\n"))
            let reply = try over.readReply()
            #expect(reply.status == 431)
            #expect(reply.text.contains(#""code":"headers_too_large""#))
        }
    }

    @Test func idleAndSlowClientsAreDisconnected() async throws {
        try await onThread {
            let (server, _) = try makeServer { $0.connectionTimeout = 1 }
            defer { server.shutdown() }
            let slow = try RawConnection(port: server.port, timeout: 4)
            slow.send("GET /hello HTTP/1.1\r\nHost: ")
            let started = Date()
            #expect(slow.peerClosed())
            #expect(Date().timeIntervalSince(started) < 3.5)
            let fine = try RawConnection(port: server.port)
            fine.send(get("/hello"))
            #expect(try fine.readReply().status == 200)
        }
    }

    @Test func halfClosedClientGetsItsAnswer() async throws {
        try await onThread {
            let (server, _) = try makeServer()
            defer { server.shutdown() }
            let connection = try RawConnection(port: server.port)
            connection.send(get("/hello"))
            connection.shutdownWrite()
            #expect(try connection.readReply().status == 200)
        }
    }

    @Test func waitingRequestsHoldNoThread() async throws {
        try await onThread {
            let (server, _) = try makeServer { $0.threads = 2 }
            defer { server.shutdown() }
            let count = 500
            let started = Date()
            let connections = try (0..<count).map { _ in try RawConnection(port: server.port, timeout: 10) }
            for connection in connections { connection.send(get("/slow")) }

            // While every slow request waits, a fast one is answered at once.
            let probeStart = Date()
            let probe = try RawConnection(port: server.port)
            probe.send(get("/hello"))
            #expect(try probe.readReply().status == 200)
            let probeSeconds = Date().timeIntervalSince(probeStart)

            for connection in connections {
                #expect(try connection.readReply().status == 200)
            }
            let total = Date().timeIntervalSince(started)
            print("waiting test: \(count) requests of 1 s in \(total) s; /hello meanwhile in \(probeSeconds * 1000) ms")
            #expect(total < 4)
            #expect(probeSeconds < 0.5)
        }
    }

    /// Parked requests (no task) are resumed on the server's threads however they are woken: from a foreign
    /// thread, before parking returns, or into waiting work; on kept-alive connections used from several threads.
    @Test func parkedRequestsAreAnsweredHoweverTheyAreWoken() async throws {
        try await onThread {
            let (server, _) = try makeServer()
            defer { server.shutdown() }
            let paths = ["/parked", "/parked-at-once", "/parked-then-later"]
            let bodies = [#"{"parked":true}"#, #"{"parked":"at once"}"#, #"{"parked":"then later"}"#]
            let failures = exchangeConcurrently(port: server.port, clients: 8, rounds: 30) { client, round in
                paths[(client + round) % 3]
            } isRight: { path, reply in
                reply.status == 200 && reply.text == bodies[paths.firstIndex(of: path)!]
            }
            #expect(failures.isEmpty, "\(failures)")
            #expect(server.waitingRequests == 0)
        }
    }

    /// A parked request never woken gets the handler timeout's 503; one woken after it, too, and the late wake
    /// changes nothing.
    @Test func parkedRequestsHonourTheHandlerTimeout() async throws {
        try await onThread {
            let (server, _) = try makeServer { $0.handlerTimeout = 0.2 }
            defer { server.shutdown() }
            for path in ["/parked-never", "/parked-late"] {
                let connection = try RawConnection(port: server.port)
                connection.send(get(path))
                let reply = try connection.readReply()
                #expect(reply.status == 503, "\(path)")
                #expect(reply.headers["retry-after"] == "1")
            }
            Thread.sleep(forTimeInterval: 0.7)  // The late wake has come and gone.
            let connection = try RawConnection(port: server.port)
            connection.send(get("/hello"))
            #expect(try connection.readReply().status == 200)
            #expect(server.waitingRequests == 0)
        }
    }

    @Test func handlerTimeoutAnswers503() async throws {
        try await onThread {
            let (server, _) = try makeServer { $0.handlerTimeout = 0.3 }
            defer { server.shutdown() }
            let connection = try RawConnection(port: server.port)
            connection.send(get("/never"))
            let reply = try connection.readReply()
            #expect(reply.status == 503)
            #expect(reply.headers["retry-after"] == "1")
        }
    }

    /// Reaped handlers go on after their cancellation somewhere other than inside the reaper's `cancel()`: many at
    /// once get their 503 and the server keeps serving (it crashed on a use after free before).
    @Test func reapedHandlersGoOnOutsideTheReaper() async throws {
        try await onThread {
            let (server, _) = try makeServer { $0.handlerTimeout = 0.2 }
            defer { server.shutdown() }
            let failures = exchangeConcurrently(port: server.port, clients: 24, rounds: 1) { _, _ in "/reaped" } isRight: {
                _, reply in reply.status == 503 && reply.headers["retry-after"] == "1"
            }
            #expect(failures.isEmpty, "\(failures)")
            let connection = try RawConnection(port: server.port)
            connection.send(get("/hello"))
            #expect(try connection.readReply().status == 200)
        }
    }

    @Test func shutdownFinishesInFlightRequestsThenRefuses() async throws {
        try await onThread {
            let (server, handler) = try makeServer()
            let connection = try RawConnection(port: server.port, timeout: 10)
            connection.send(get("/slow"))
            Thread.sleep(forTimeInterval: 0.1)
            let port = server.port
            let stopper = Thread { server.shutdown(gracePeriod: 5) }
            stopper.start()
            #expect(try connection.readReply().status == 200)
            Thread.sleep(forTimeInterval: 0.3)
            #expect(throws: (any Error).self) {
                let late = try RawConnection(port: port)
                late.send(get("/hello"))
                _ = try late.readReply()
            }
            #expect(handler.records.all.contains { $0.route == "/slow" && $0.status == 200 })
        }
    }

    @Test func everyExchangeIsReleased() async throws {
        try await onThread {
            // A client that leaves while its request waits is noticed when the answer is sent, or at the latest
            // by the idle timeout; either way the exchange is released exactly once.
            let (server, handler) = try makeServer { $0.connectionTimeout = 2 }
            defer { server.shutdown() }
            for path in ["/hello", "/nowhere", "/hello"] {
                let connection = try RawConnection(port: server.port)
                connection.send(get(path))
                _ = try connection.readReply()
                connection.close()
            }
            let aborted = try RawConnection(port: server.port)
            aborted.send(get("/slow"))
            aborted.close()
            #expect(eventually(timeout: 15) { server.activeRequests == 0 && handler.records.all.count == 4 })
            #expect(server.activeRequests == 0)
            #expect(handler.records.all.count == 4)
        }
    }

    @Test func garbageAndUnknownMethodsDoNotHurtTheServer() async throws {
        try await onThread {
            let (server, _) = try makeServer()
            defer { server.shutdown() }
            let garbage = try RawConnection(port: server.port)
            garbage.send([0x16, 0x03, 0x01, 0x00, 0xff, 0x0d, 0x0a, 0x0d, 0x0a])
            if let reply = try? garbage.readReply() { #expect((400..<500).contains(reply.status)) }
            let noVersion = try RawConnection(port: server.port)
            noVersion.send("BREW /hello\r\n\r\n")
            if let reply = try? noVersion.readReply() { #expect((400..<600).contains(reply.status)) }
            let odd = try RawConnection(port: server.port)
            odd.send("BREW /hello HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(try odd.readReply().status == 404)
            let fine = try RawConnection(port: server.port)
            fine.send(get("/hello"))
            #expect(try fine.readReply().status == 200)
        }
    }

    @Test func connectionLimitRefusesTheExcessAndRecovers() async throws {
        try await onThread {
            let (server, _) = try makeServer { $0.connectionLimit = 4 }
            defer { server.shutdown() }
            var held = try (0..<4).map { _ in try RawConnection(port: server.port, timeout: 2) }
            for connection in held {
                connection.send(get("/hello"))
                #expect(try connection.readReply().status == 200)
            }
            let extra = try RawConnection(port: server.port, timeout: 2)
            extra.send(get("/hello"))
            #expect(throws: (any Error).self) { try extra.readReply() }
            held.removeAll()
            #expect(eventually {
                guard let again = try? RawConnection(port: server.port, timeout: 2) else { return false }
                again.send(get("/hello"))
                return (try? again.readReply().status) == 200
            })
        }
    }
}
