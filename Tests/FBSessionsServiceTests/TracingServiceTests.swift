import FBSessionsCore
import FBSessionsService
import FBSessionsStorage
import Foundation
import GraphEmulator
import HTTPClient
import Support
import TestSupport
import Testing
import Tracing

/// Traces end to end: the service as `fbsessiond serve` wires it, real PostgreSQL, the Graph emulator over HTTP, and
/// an OTLP collector on the project's HTTP server that captures what the exporter POSTs (docs/operations.md,
/// "Traces").
@Suite(.enabled(if: TestDatabase.isEnabled), .serialized) struct TracingServiceTests {
    static let incomingTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let incomingSpan = "00f067aa0ba902b7"

    /// Tracing on, for a test that gives an in-memory exporter (the endpoint is never called).
    static var inMemoryTracing: TracingConfiguration {
        var configuration = TracingConfiguration(endpoint: "http://127.0.0.1:9/v1/traces")
        configuration.scheduleDelay = 0.02
        return configuration
    }

    /// Tracing to `endpoint` with a short schedule, so that tests need not wait seconds for an export.
    static func tracing(
        to endpoint: String, queue: Int = 2048, batch: Int = 512, exportTimeout: Double = 5, sampler: Sampler? = nil,
        headers: [(String, String)] = []
    ) -> (inout ServiceParts) -> Void {
        { parts in
            var configuration = TracingConfiguration(endpoint: endpoint + "/v1/traces")
            configuration.headers = headers
            configuration.scheduleDelay = 0.05
            configuration.maxQueueSize = queue
            configuration.maxExportBatchSize = batch
            configuration.exportTimeout = exportTimeout
            configuration.batchExportTimeout = exportTimeout
            if let sampler { configuration.sampler = sampler }
            parts.settings.tracing = configuration
        }
    }

    /// A request with extra headers, timed.
    static func call(
        _ harness: SessionHarness, _ method: String, _ path: String, json: Any? = nil, headers extra: [(String, String)] = [],
        key: String? = nil
    ) async throws -> (reply: SessionHarness.Reply, seconds: Double) {
        var headers = [("Authorization", "Bearer \(key ?? harness.key)")] + extra
        var body: [UInt8]?
        if let json {
            body = Array(try JSONSerialization.data(withJSONObject: json))
            headers.append(("Content-Type", "application/json"))
        }
        let started = ContinuousClock.now
        let response = try await harness.client.execute(
            ClientRequest(method: method, url: "http://127.0.0.1:\(harness.server.port)\(path)", headers: headers, body: body))
        let seconds = (ContinuousClock.now - started) / .seconds(1)
        return (SessionHarness.Reply(status: response.status, headers: response.headers, body: response.body), seconds)
    }

    /// A counter's value as `/metrics` renders it.
    static func counter(_ harness: SessionHarness, _ name: String) -> Double {
        for line in harness.service.metrics.render().split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.split(separator: " ").last ?? "") ?? -1
        }
        return -1
    }

    @Test func aLoginIsOneTraceWithGraphAndDatabaseChildrenContinuingTheCallersTraceparent() async throws {
        let collector = try OTLPCollector(mode: .accept)
        defer { collector.stop() }
        let harness = try await SessionHarness(
            configure: Self.tracing(to: collector.baseURL, headers: [("X-Collector-Key", "collector-key-1")]))
        defer { harness.stop() }
        let (_, token) = try harness.userToken()
        let traceparent = "00-\(Self.incomingTrace)-\(Self.incomingSpan)-01"
        let (login, _) = try await Self.call(
            harness, "POST", "/v1/sessions", json: ["owner": "owner-1", "access_token": token],
            headers: [("traceparent", traceparent), ("tracestate", "vendor=kept")])
        #expect((200..<300).contains(login.status))
        let tracer = try #require(harness.service.tracer)
        #expect(tracer.flush(timeout: 5))

        let exports = collector.exports
        #expect(!exports.isEmpty)
        #expect(exports.allSatisfy { $0.contentType == "application/x-protobuf" })
        #expect(exports.allSatisfy { export in
            export.headers.contains { $0.0.lowercased() == "x-collector-key" && $0.1 == "collector-key-1" }
        }, "OTEL_EXPORTER_OTLP_HEADERS go with every export")
        #expect(exports.first?.resource["service.name"] == "fbsessiond")
        #expect(exports.first?.resource["telemetry.sdk.language"] == "swift")
        let spans = collector.spans.filter { $0.traceID == Self.incomingTrace }
        let server = try #require(spans.first { $0.name == "POST /v1/sessions" }, "\(collector.spans.map(\.name))")
        #expect(server.parentSpanID == Self.incomingSpan, "the caller's traceparent is continued")
        #expect(server.traceState == "vendor=kept")
        #expect(server.kind == 2)
        #expect(server.attributes["http.request.method"] == "POST")
        #expect(server.attributes["http.route"] == "/v1/sessions")
        #expect(server.attributes["url.path"] == "/v1/sessions")
        #expect(server.attributes["http.response.status_code"] == String(login.status))
        #expect(server.attributes["fbs.key_id"]?.isEmpty == false)
        #expect(server.attributes["fbs.request_id"] == login.header("X-Request-Id"))

        let graph = spans.filter { $0.name.hasPrefix("graph ") }
        #expect(graph.count >= 2, "\(spans.map(\.name))")
        for call in graph {
            #expect(call.parentSpanID == server.spanID, "\(call.name) is a child of the request")
            #expect(call.kind == 3)
            #expect(call.attributes["server.address"] == "127.0.0.1")
            #expect(call.attributes["fbs.graph.endpoint"] == String(call.name.dropFirst("graph ".count)))
            #expect(call.attributes["fbs.graph.version"]?.hasPrefix("v") == true)
            #expect(call.attributes["http.response.status_code"] == "200")
        }
        #expect(Set(graph.map(\.name)).isSuperset(of: ["graph debug_token", "graph me"]), "\(graph.map(\.name))")
        let database = spans.filter { $0.attributes["db.system.name"] == "postgresql" }
        #expect(database.contains { $0.name == "postgresql transaction" }, "\(spans.map(\.name))")
        for work in database {
            #expect(work.parentSpanID == server.spanID, "\(work.name) is a child of the request")
        }

        // A request with no traceparent starts a trace of its own (parentbased_always_on samples it).
        let id = try #require(login.json["id"] as? String)
        let (status, _) = try await Self.call(harness, "GET", "/v1/sessions/\(id)")
        #expect(status.status == 200)
        #expect(tracer.flush(timeout: 5))
        let root = try #require(collector.spans.first { $0.name == "GET /v1/sessions/{id}" })
        #expect(root.parentSpanID.isEmpty && root.traceID != Self.incomingTrace)
        #expect(root.attributes["url.path"] == "/v1/sessions/\(id)")
        #expect(Self.counter(harness, "fbs_otel_exported_spans_total") >= Double(spans.count))
        #expect(Self.counter(harness, "fbs_otel_dropped_spans_total") == 0)
    }

    @Test func anUnsampledCallerIsNotRecordedAndAnInvalidTraceparentStartsANewTrace() async throws {
        let collector = try OTLPCollector(mode: .accept)
        defer { collector.stop() }
        let harness = try await SessionHarness(configure: Self.tracing(to: collector.baseURL))
        defer { harness.stop() }
        let (_, token) = try harness.userToken()
        _ = try await Self.call(
            harness, "POST", "/v1/sessions", json: ["owner": "o", "access_token": token],
            headers: [("traceparent", "00-\(Self.incomingTrace)-\(Self.incomingSpan)-00")])
        _ = try await Self.call(
            harness, "GET", "/v1/owners/o/sessions",
            headers: [("traceparent", "00-\(Self.incomingTrace.uppercased())-\(Self.incomingSpan)-01")])
        #expect(harness.service.tracer?.flush(timeout: 5) == true)
        let spans = collector.spans
        #expect(!spans.contains { $0.name == "POST /v1/sessions" }, "the caller said not sampled")
        #expect(!spans.contains { $0.name.hasPrefix("graph ") })
        let list = try #require(spans.first { $0.name == "GET /v1/owners/{owner}/sessions" }, "\(spans.map(\.name))")
        #expect(list.traceID != Self.incomingTrace.lowercased() && list.parentSpanID.isEmpty)
        #expect(list.attributes["http.response.status_code"] == "200")

        // An unknown key's 401 is traced too (the server span is the outermost middleware), with no key id.
        let unknown = "fbs_" + String(repeating: "x", count: 40)
        let (refused, _) = try await Self.call(harness, "GET", "/v1/owners/p/sessions", key: unknown)
        #expect(refused.status == 401)
        #expect(harness.service.tracer?.flush(timeout: 5) == true)
        let unauthorized = try #require(collector.spans.first { $0.attributes["url.path"] == "/v1/owners/p/sessions" })
        #expect(unauthorized.attributes["http.response.status_code"] == "401")
        #expect(unauthorized.attributes["fbs.key_id"] == nil)
        #expect(unauthorized.statusCode == 0, "a 4xx is not a server error")
    }

    @Test func answersMadeBeforeTheMiddlewareAreTracedToo() async throws {
        let collector = try OTLPCollector(mode: .accept)
        defer { collector.stop() }
        let harness = try await SessionHarness(configure: Self.tracing(to: collector.baseURL))
        defer { harness.stop() }
        let parent = [("traceparent", "00-\(Self.incomingTrace)-\(Self.incomingSpan)-01")]
        let (health, _) = try await Self.call(harness, "GET", "/healthz", headers: parent)
        #expect(health.status == 200)
        let (unknown, _) = try await Self.call(harness, "GET", "/v1/no-such-route-secret-looking-text", headers: parent)
        #expect(unknown.status == 404)
        let (wrongMethod, _) = try await Self.call(harness, "PUT", "/v1/sessions", headers: parent)
        #expect(wrongMethod.status == 405)
        let bare = try await harness.client.execute(ClientRequest(
            method: "GET", url: "http://127.0.0.1:\(harness.server.port)/v1/owners/o/sessions", headers: parent))
        #expect(bare.status == 401)
        #expect(harness.service.tracer?.flush(timeout: 5) == true)
        let spans = collector.spans.filter { $0.traceID == Self.incomingTrace }
        func span(_ name: String) -> OTLPDecodedSpan? { spans.first { $0.name == name } }

        let healthz = try #require(span("GET /healthz"), "\(spans.map(\.name))")
        #expect(healthz.parentSpanID == Self.incomingSpan)
        #expect(healthz.attributes["http.route"] == "/healthz" && healthz.attributes["http.response.status_code"] == "200")
        // A path no route knows: named by the method alone, and its text is in no attribute.
        let notFound = try #require(span("GET"), "\(spans.map(\.name))")
        #expect(notFound.attributes["http.response.status_code"] == "404")
        #expect(!notFound.attributes.values.contains { $0.contains("secret-looking") })
        #expect(notFound.attributes["http.route"] == nil && notFound.attributes["url.path"] == nil)
        let notAllowed = try #require(span("PUT /v1/sessions"), "\(spans.map(\.name))")
        #expect(notAllowed.attributes["http.response.status_code"] == "405")
        let missingKey = try #require(span("GET /v1/owners/{owner}/sessions"), "\(spans.map(\.name))")
        #expect(missingKey.attributes["http.response.status_code"] == "401")
        #expect(missingKey.attributes["fbs.key_id"] == nil)
    }

    @Test func theLogLinesOfASampledRequestCarryItsTraceAndSpanIDs() async throws {
        let collector = try OTLPCollector(mode: .accept)
        defer { collector.stop() }
        let logs = InMemoryLogHandler()
        let harness = try await SessionHarness { parts in
            Self.tracing(to: collector.baseURL)(&parts)
            parts.logger = { Logger(label: $0, level: .info, handler: logs) }
        }
        defer { harness.stop() }
        let (sampled, _) = try await Self.call(
            harness, "GET", "/v1/owners/o/sessions", headers: [("traceparent", "00-\(Self.incomingTrace)-\(Self.incomingSpan)-01")])
        let (unsampled, _) = try await Self.call(
            harness, "GET", "/v1/owners/o/sessions", headers: [("traceparent", "00-\(Self.incomingTrace)-\(Self.incomingSpan)-00")])
        #expect(harness.service.tracer?.flush(timeout: 5) == true)
        let server = try #require(collector.spans.first { $0.name == "GET /v1/owners/{owner}/sessions" })
        // The request line is written once the exchange has ended.
        func line(_ reply: SessionHarness.Reply) async throws -> LogRecord? {
            let id = reply.header("X-Request-Id") ?? ""
            for _ in 0..<100 {
                if let found = logs.records.first(where: { $0.message == "request" && $0.metadata["request_id"] == .string(id) }) {
                    return found
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            return nil
        }
        let traced = try #require(try await line(sampled))
        #expect(traced.metadata["trace_id"] == .string(Self.incomingTrace))
        #expect(traced.metadata["span_id"] == .string(server.spanID))
        let untraced = try #require(try await line(unsampled))
        #expect(untraced.metadata["trace_id"] == nil && untraced.metadata["span_id"] == nil)
    }

    @Test func aLoginsSpansCarryNoSecret() async throws {
        let exporter = InMemorySpanExporter()
        let harness = try await SessionHarness { parts in
            Self.tracing(to: "http://127.0.0.1:9")(&parts)
            parts.spanExporter = exporter
        }
        defer { harness.stop() }
        let (_, token) = try harness.userToken(longLived: false)
        let login = try await harness.login(owner: "owner-secret-test", token: token)
        #expect((200..<300).contains(login.status))
        let id = try #require(login.json["id"] as? String)
        let read = try await harness.call("GET", "/v1/sessions/\(id)/token")
        #expect(read.status == 200)
        let stored = try #require(read.json["access_token"] as? String)
        let proof = try #require(read.json["appsecret_proof"] as? String)
        #expect(harness.service.tracer?.flush(timeout: 5) == true)
        let spans = exporter.spans
        #expect(spans.contains { $0.name == "graph oauth/access_token" } || spans.contains { $0.name == "graph debug_token" })
        let secrets = [
            token, stored, proof, harness.key, harness.sessionsKey, harness.facebookApp.secret, harness.keyringText,
        ]
        for span in spans {
            var texts = [span.name, span.statusMessage ?? "", span.context.traceState ?? ""]
            for (key, value) in span.attributes {
                texts.append(key)
                if case .string(let text) = value { texts.append(text) }
            }
            for text in texts {
                for secret in secrets where !secret.isEmpty {
                    #expect(!text.contains(secret), "a secret in span \(span.name)")
                }
                #expect(!text.contains("appsecret_proof") && !text.contains("access_token="), "no query in \(span.name)")
            }
        }
    }

    @Test func aWebhookDeliveryIsTracedAndCarriesItsTraceparent() async throws {
        let collector = try OTLPCollector(mode: .accept)
        defer { collector.stop() }
        let received = Locked<[PeerRequest]>([])
        let receiver = try ScriptedPeer { request in
            received.withLock { $0.append(request) }
            return .text("ok")
        }
        defer { receiver.stop() }
        let harness = try await SessionHarness(configure: Self.tracing(to: collector.baseURL))
        defer { harness.stop() }
        let webhooks = PostgresWebhookStore(database: harness.service.database.database, keyring: harness.keyring)
        let (_, secret) = try await webhooks.addWebhook(appID: harness.app.id, url: receiver.baseURL + "/hook")
        SecretsTranscript.noted("webhook secret", secret)
        let (_, token) = try harness.userToken()
        #expect((200..<300).contains(try await harness.login(owner: "o", token: token).status))
        harness.service.webhooks.start()
        let deadline = ContinuousClock.now + .seconds(20)
        while received.withLock({ $0.isEmpty }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        let header = received.withLock { $0.first?.header("traceparent") }
        // The delivery's span ends once its outcome is recorded, just after the POST.
        let context = header.flatMap { TraceParent.parse($0) }
        while let context, !collector.spans.contains(where: { $0.spanID == context.spanID.hex }),
            ContinuousClock.now < deadline
        {
            harness.service.tracer?.flush(timeout: 1)
            try await Task.sleep(for: .milliseconds(20))
        }
        await harness.service.webhooks.stop()
        try #require(header != nil, "the delivery carries a traceparent")
        let parsed = try #require(context, "a valid traceparent: \(header ?? "")")
        #expect(parsed.isSampled)
        let span = try #require(collector.spans.first { $0.spanID == parsed.spanID.hex })
        #expect(span.name == "webhook delivery" && span.kind == 3)
        #expect(span.traceID == parsed.traceID.hex)
        #expect(span.attributes["server.address"] == "127.0.0.1")
        #expect(span.attributes["http.response.status_code"] == "200")
        #expect(!span.attributes.values.contains { $0.contains("/hook") }, "the host only, never the URL")
    }

    enum BadCollector: String, CaseIterable, Sendable {
        case hangs, answers503, isGone
    }

    @Test(arguments: BadCollector.allCases)
    func aBadCollectorCostsDroppedSpansAndNothingElse(_ bad: BadCollector) async throws {
        let collector = try OTLPCollector(mode: bad == .hangs ? .hang : .refuse)
        let endpoint = collector.baseURL
        if bad == .isGone { collector.stop() }
        defer { collector.stop() }
        let harness = try await SessionHarness(
            configure: Self.tracing(to: endpoint, queue: 16, batch: 4, exportTimeout: 0.5))
        defer { harness.stop() }
        let (_, token) = try harness.userToken()
        let login = try await harness.login(owner: "o", token: token)
        let id = try #require(login.json["id"] as? String)
        // A warm request first, to know what "fast" is here.
        let (_, warm) = try await Self.call(harness, "GET", "/v1/sessions/\(id)")
        var slowest = 0.0
        for _ in 0..<60 {
            let (reply, seconds) = try await Self.call(harness, "GET", "/v1/sessions/\(id)")
            #expect(reply.status == 200)
            slowest = max(slowest, seconds)
        }
        #expect(slowest < max(0.4, warm * 20), "no request waits on the collector (slowest \(slowest) s)")
        let deadline = ContinuousClock.now + .seconds(10)
        while Self.counter(harness, "fbs_otel_dropped_spans_total") <= 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(Self.counter(harness, "fbs_otel_dropped_spans_total") > 0)
        #expect(Self.counter(harness, "fbs_otel_exported_spans_total") == 0)
        if bad != .isGone { #expect(!collector.exports.isEmpty, "the exporter did try") }
    }

    @Test func aPictureFetchIsAChildOfItsRequest() async throws {
        let exporter = InMemorySpanExporter()
        var options = PictureHarness.Options()
        options.spanExporter = exporter
        let harness = try await PictureHarness(options)
        defer { harness.stop() }
        let (_, session) = try await harness.loggedIn()
        let reply = try await harness.picture(session)
        #expect(reply.status == 200)
        #expect(harness.service.tracer?.flush(timeout: 5) == true)
        let spans = exporter.spans
        let server = try #require(spans.first { $0.name == "GET /v1/sessions/{id}/picture" }, "\(spans.map(\.name))")
        let fetch = try #require(spans.first { $0.name == "picture fetch" }, "\(spans.map(\.name))")
        #expect(fetch.parentSpanID == server.context.spanID && fetch.context.traceID == server.context.traceID)
        #expect(fetch.kind == .client)
        #expect(fetch.attribute("server.address") == .string("127.0.0.1"))
        #expect(fetch.attribute("http.response.status_code") == .int(200))
        #expect(spans.contains { $0.name == "graph me/picture" && $0.parentSpanID == server.context.spanID })
    }

    @Test func aLimitedLoginsKeySetFetchIsAChildOfItsRequestAndNoSpanCarriesTheTokenOrNonce() async throws {
        let exporter = InMemorySpanExporter()
        let harness = try await LimitedLoginHarness(spanExporter: exporter)
        defer { harness.stop() }
        let user = try harness.emulator.createUser(firstName: "Grace", lastName: "Hopper", hasPicture: false)
        let nonce = try await harness.nonce(owner: "o1")
        let minted = try harness.emulator.mintAuthenticationToken(
            AuthenticationTokenRequest(appID: harness.facebookAppID, userID: user.id, nonce: nonce))
        let reply = try await harness.login(owner: "o1", token: minted.token)
        #expect(reply.status == 201, "\(reply.text)")
        #expect(harness.base.service.tracer?.flush(timeout: 5) == true)
        let spans = exporter.spans
        let login = try #require(spans.first { $0.name == "POST /v1/sessions" }, "\(spans.map(\.name))")
        let fetch = try #require(spans.first { $0.name == "jwks fetch" }, "\(spans.map(\.name))")
        #expect(fetch.parentSpanID == login.context.spanID && fetch.kind == .client)
        #expect(fetch.attribute("server.address") == .string("127.0.0.1"))
        #expect(fetch.attribute("http.response.status_code") == .int(200))
        for span in spans {
            for (key, value) in span.attributes {
                guard case .string(let text) = value else { continue }
                #expect(!text.contains(minted.token) && !text.contains(nonce), "\(key) of \(span.name)")
            }
        }
    }

    @Test func withTracingOffNothingIsTracedAndTheCountersStayAtZero() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        #expect(harness.service.tracer == nil)
        #expect(harness.service.router.tracer == nil)
        let (_, token) = try harness.userToken()
        let (login, _) = try await Self.call(
            harness, "POST", "/v1/sessions", json: ["owner": "o", "access_token": token],
            headers: [("traceparent", "00-\(Self.incomingTrace)-\(Self.incomingSpan)-01")])
        #expect(login.status == 201)
        #expect(Self.counter(harness, "fbs_otel_exported_spans_total") == 0)
        #expect(Self.counter(harness, "fbs_otel_dropped_spans_total") == 0)
    }
}
