import Foundation
import HTTPServer
import Support
import Testing
import TestSupport

/// Counts the requests it is asked to answer, so a smuggled second request shows up.
private final class CountingHandler: RequestHandler, Sendable {
    private let paths = Locked<[String]>([])
    var served: [String] { paths.withLock { $0 } }

    func inspect(_ head: RequestHead) -> HeadDecision { .proceed(route: head.path, respond: respond) }

    func respond(to request: Request) -> Reply {
        paths.withLock { $0.append(request.head.path + "?" + request.head.rawQuery) }
        return .now(.json(status: 200, body: Array(#"{"ok":true}"#.utf8)))
    }

    func completed(_ record: ExchangeRecord) {}
}

/// Regression tests for what `tools/abuse/run` found: libmicrohttpd 0.9.75 served a second, smuggled request
/// after a request framed two ways (Content-Length with Transfer-Encoding, two Content-Lengths, a
/// `Transfer-Encoding ` field with whitespace before its colon). Each must now be answered once, 400, with the
/// connection closed, and the smuggled request never reach the handler.
@Suite struct RequestFramingTests {
    static let smuggled = "GET /smuggled?x HTTP/1.1\r\nHost: x\r\n\r\n"

    static let ambiguous: [(String, String)] = [
        ("Content-Length with Transfer-Encoding",
         "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled),
        ("Transfer-Encoding with Content-Length",
         "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n" + smuggled),
        ("two different Content-Lengths",
         "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 38\r\n\r\n" + smuggled),
        ("two equal Content-Lengths", "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}"),
        ("whitespace before the colon",
         "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n" + smuggled),
        ("an unknown transfer coding",
         "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n" + smuggled),
        ("chunked, then identity",
         "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n" + smuggled),
    ]

    @Test func ambiguousFramingIsRefusedOnceAndTheConnectionClosed() async throws {
        let handler = CountingHandler()
        var configuration = ServerConfiguration()
        configuration.port = 0
        let server = try Server(configuration: configuration, handler: handler)
        defer { server.shutdown(gracePeriod: 0) }
        try await onThread {
            for (name, request) in Self.ambiguous {
                let connection = try RawConnection(port: server.port, timeout: 3)
                defer { connection.close() }
                connection.send(request)
                let reply = try connection.readReply()
                #expect(reply.status == 400, "\(name): \(reply.status)")
                #expect(reply.headers["connection"]?.lowercased() == "close", "\(name)")
                #expect(reply.text.contains(#""code":"invalid_request""#), "\(name)")
                #expect(connection.peerClosed(), "\(name): the connection stayed open")
            }
            #expect(handler.served.isEmpty, "requests reached the handler: \(handler.served)")

            // libmicrohttpd's strict mode: an HTTP/1.1 request without Host is 400 (RFC 9112 §3.2).
            let hostless = try RawConnection(port: server.port, timeout: 3)
            defer { hostless.close() }
            hostless.send("GET /h HTTP/1.1\r\n\r\n")
            #expect(try hostless.readReply().status == 400)
            #expect(handler.served.isEmpty)

            // Well-framed requests still work, pipelined too: chunked alone, and one Content-Length.
            let connection = try RawConnection(port: server.port, timeout: 3)
            defer { connection.close() }
            connection.send(
                "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
                    + "POST /l HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}" + "GET /g HTTP/1.1\r\nHost: x\r\n\r\n")
            for _ in 0..<3 { #expect(try connection.readReply().status == 200) }
            #expect(handler.served == ["/c?", "/l?", "/g?"])
        }
    }
}
