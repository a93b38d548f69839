import Foundation
import HTTPClient
import HTTPServer
import Testing
import TestSupport

private struct Probe: RequestHandler {
    func inspect(_ head: RequestHead) -> HeadDecision { .proceed(route: nil) }
    func respond(to request: Request) -> Reply {
        if request.path == "/later" { return .later { Response(status: 1000) } }
        return .now(Response(status: 1000))
    }
    func completed(_ record: ExchangeRecord) {}
}

@Test func dropProbe() async throws {
    var configuration = ServerConfiguration()
    configuration.port = 0
    let server = try Server(configuration: configuration, handler: Probe())
    defer { server.shutdown() }
    let client = try Client()
    for path in ["/now", "/later", "/now"] {
        do {
            let response = try await client.execute(ClientRequest(url: "http://127.0.0.1:\(server.port)\(path)"))
            print("PROBE", path, response.status, response.bodyText)
        } catch let error as ClientError {
            print("PROBE", path, "error", error.debugDescription)
        }
    }
    let raw = try await onThread { () -> String in
        let connection = try RawConnection(port: server.port)
        connection.send(Array("GET /later HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        do { _ = try connection.readReply(); return "reply" } catch { return "\(error)" }
    }
    print("PROBE raw", raw)
}
