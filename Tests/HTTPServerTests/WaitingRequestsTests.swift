import Foundation
import HTTPClient
import HTTPServer
import Testing
import TestSupport

/// Proof that a request waiting on an outbound call holds no thread: 1,000 requests, each making a 1 s call to a
/// slow in-process peer, all finish in about one second while `/healthz` keeps answering in milliseconds.
@Suite struct WaitingRequestsTests {
    /// The slow peer: answers every request after one second, holding no thread while it waits.
    struct SlowPeer: RequestHandler {
        func inspect(_ head: RequestHead) -> HeadDecision { .proceed(route: "/slow", respond: respond) }
        func respond(to request: Request) -> Reply {
            .later {
                try? await Task.sleep(nanoseconds: 1_000_000_000)
                return .json(status: 200, body: Array(#"{"slow":true}"#.utf8))
            }
        }
        func completed(_ record: ExchangeRecord) {}
    }

    /// The service under test: `/proxy` calls the peer over HTTP; `/healthz` answers at once.
    struct Proxy: RequestHandler {
        let client: Client
        let peerURL: String
        func inspect(_ head: RequestHead) -> HeadDecision { .proceed(route: head.path, respond: respond) }
        func respond(to request: Request) -> Reply {
            if request.path == "/healthz" { return .now(.json(status: 200, body: Array(#"{"status":"ok"}"#.utf8))) }
            let client = self.client
            let url = peerURL
            return .later {
                do {
                    let answer = try await client.execute(ClientRequest(url: url))
                    return .json(status: answer.status, body: answer.body)
                } catch {
                    return .error(status: 502, code: "upstream", message: "peer failed")
                }
            }
        }
        func completed(_ record: ExchangeRecord) {}
    }

    @Test func thousandOutboundWaitsFinishInAboutOneSecond() async throws {
        var peerConfiguration = ServerConfiguration()
        peerConfiguration.port = 0
        let peer = try Server(configuration: peerConfiguration, handler: SlowPeer())
        defer { peer.shutdown(gracePeriod: 0) }
        let outbound = try Client(configuration: .init(timeout: .seconds(20)))
        defer { outbound.shutdown() }
        var serviceConfiguration = ServerConfiguration()
        serviceConfiguration.port = 0
        serviceConfiguration.threads = 2
        let service = try Server(
            configuration: serviceConfiguration,
            handler: Proxy(client: outbound, peerURL: "http://127.0.0.1:\(peer.port)/slow"))
        defer { service.shutdown(gracePeriod: 0) }
        let callers = try Client(configuration: .init(timeout: .seconds(20)))
        defer { callers.shutdown() }

        let count = 1000
        let started = ContinuousClock.now
        async let statuses: [Int] = withTaskGroup(of: Int.self) { group in
            for _ in 0..<count {
                group.addTask {
                    (try? await callers.execute(ClientRequest(url: "http://127.0.0.1:\(service.port)/proxy")))?.status ?? -1
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        // While all of them wait, /healthz answers quickly (on a separate client and connection).
        try await Task.sleep(nanoseconds: 400_000_000)
        let probeClient = try Client()
        defer { probeClient.shutdown() }
        var probes: [Duration] = []
        for _ in 0..<5 {
            let probeStart = ContinuousClock.now
            let health = try await probeClient.execute(ClientRequest(url: "http://127.0.0.1:\(service.port)/healthz"))
            probes.append(ContinuousClock.now - probeStart)
            #expect(health.status == 200)
        }
        let results = await statuses
        let elapsed = ContinuousClock.now - started
        let slowestProbe = probes.max() ?? .zero
        print("waiting-requests: \(count) requests x 1 s outbound call finished in \(elapsed); /healthz during: max \(slowestProbe)")
        #expect(results.filter { $0 == 200 }.count == count)
        #expect(elapsed < .seconds(10))  // a thread per wait would take minutes; the figure is printed
        // A thread held per waiting request would delay /healthz by a whole second or more.
        #expect(slowestProbe < .seconds(1))
    }
}
