import Foundation
import Support
import Synchronization
import TestSupport
import Testing

@testable import Tracing

/// The encoder against an independent protobuf reading, and the queue that never blocks.
@Suite struct ExportTests {
    /// A counter's value as `/metrics` renders it.
    func counter(_ metrics: MetricsRegistry, _ name: String) -> Double {
        for line in metrics.render().split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.split(separator: " ").last ?? "") ?? -1
        }
        return -1
    }

    static func configuration(queue: Int = 2048, batch: Int = 512, delay: Double = 0.02) -> TracingConfiguration {
        var configuration = TracingConfiguration(endpoint: "http://127.0.0.1:1/v1/traces")
        configuration.maxQueueSize = queue
        configuration.maxExportBatchSize = batch
        configuration.scheduleDelay = delay
        configuration.batchExportTimeout = 1
        return configuration
    }

    @Test func encodesTheFieldsOTLPDefines() throws {
        let exporter = InMemorySpanExporter()
        let tracer = Tracer(configuration: Self.configuration(), exporter: exporter, metrics: nil)
        defer { tracer.shutdown(timeout: 1) }
        let decision = tracer.decide(
            traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", tracestate: "vendor=opaque")
        let server = try #require(tracer.serverSpan("GET /v1/sessions/{id}", decision: decision))
        server.set("http.response.status_code", 500)
        server.set("http.route", "/v1/sessions/{id}")
        server.set("fbs.flag", .bool(true))
        server.set("fbs.ratio", .double(0.5))
        server.setError()
        let child = tracer.child("postgresql batch", of: server.context)
        child.addLink(SpanContext(traceID: TraceID(high: 7, low: 8), spanID: SpanID(9), flags: 1))
        child.end()
        server.end()
        #expect(tracer.flush(timeout: 2))
        let spans = exporter.spans
        #expect(spans.count == 2)

        var configuration = Self.configuration()
        configuration.serviceName = "sessions-test"
        configuration.resourceAttributes = [("deployment.environment", "test"), ("service.name", "ignored")]
        let encoder = OTLPTraceEncoder(resource: OTLPTraceEncoder.resource(configuration, version: "1.2.3"))
        let body = encoder.encode(spans)
        let resource = try OTLPDecoded.resource(in: body)
        #expect(resource["service.name"] == "sessions-test")
        #expect(resource["service.version"] == "1.2.3")
        #expect(resource["telemetry.sdk.language"] == "swift")
        #expect(resource["deployment.environment"] == "test")
        #expect(resource["service.instance.id"]?.count == 36)

        let decoded = try OTLPDecoded.spans(in: body)
        let serverSpan = try #require(decoded.first { $0.name == "GET /v1/sessions/{id}" })
        #expect(serverSpan.traceID == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(serverSpan.parentSpanID == "00f067aa0ba902b7")
        #expect(serverSpan.traceState == "vendor=opaque")
        #expect(serverSpan.kind == 2 && serverSpan.statusCode == 2)
        #expect(serverSpan.attributes["http.response.status_code"] == "500")
        #expect(serverSpan.attributes["http.route"] == "/v1/sessions/{id}")
        #expect(serverSpan.attributes["fbs.flag"] == "true" && serverSpan.attributes["fbs.ratio"] == "0.5")
        #expect(serverSpan.flags & 0xFF == 1 && serverSpan.flags & 0x300 == 0x300, "sampled, parent remote")
        #expect(serverSpan.end >= serverSpan.start && serverSpan.start > 1_700_000_000 * 1_000_000_000)
        let batch = try #require(decoded.first { $0.name == "postgresql batch" })
        #expect(batch.parentSpanID == serverSpan.spanID && batch.traceID == serverSpan.traceID)
        #expect(batch.kind == 3)
        #expect(batch.links == ["00000000000000070000000000000008/0000000000000009"])
    }

    @Test func aKnownSpanEncodesToKnownBytes() {
        let span = SpanData(
            name: "a", kind: .client,
            context: SpanContext(traceID: TraceID(high: 0, low: 1), spanID: SpanID(2), flags: 1),
            parentSpanID: nil, start: 3, end: 4, attributes: [("k", .int(5))], status: .unset, statusMessage: nil,
            links: [])
        let bytes = OTLPTraceEncoder(resource: [], scopeName: "s").encode([span])
        let trace: [UInt8] = [0x0A, 16] + [UInt8](repeating: 0, count: 15) + [1]
        let spanID: [UInt8] = [0x12, 8] + [UInt8](repeating: 0, count: 7) + [2]
        let times: [UInt8] = [0x39, 3, 0, 0, 0, 0, 0, 0, 0] + [0x41, 4, 0, 0, 0, 0, 0, 0, 0]
        let attribute: [UInt8] = [0x4A, 7, 0x0A, 1, UInt8(ascii: "k"), 0x12, 2, 0x18, 5]
        let spanBody: [UInt8] = trace + spanID + [0x2A, 1, UInt8(ascii: "a"), 0x30, 3] + times + attribute
            + [0x85, 0x01, 1, 0, 0, 0]
        let scope: [UInt8] = [0x0A, 3, 0x0A, 1, UInt8(ascii: "s")]
        let scopeSpans: [UInt8] = scope + [0x12, UInt8(spanBody.count)] + spanBody
        let resourceSpans: [UInt8] = [0x0A, 0] + [0x12, UInt8(scopeSpans.count)] + scopeSpans
        #expect(bytes == [0x0A, UInt8(resourceSpans.count)] + resourceSpans)
    }

    /// An exporter that blocks until told: the export thread is stuck, as on a collector that hangs.
    final class StuckExporter: SpanExporter {
        let release = DispatchSemaphore(value: 0)
        let calls = Atomic<Int>(0)
        func export(_ spans: [SpanData], timeout: Double) -> Bool {
            calls.add(1, ordering: .relaxed)
            _ = release.wait(timeout: .now() + timeout)
            return false
        }
    }

    @Test func aStuckExporterNeverBlocksEndingSpansAndTheQueueStaysBounded() throws {
        let exporter = StuckExporter()
        let metrics = MetricsRegistry()
        let tracer = Tracer(configuration: Self.configuration(queue: 8, batch: 4), exporter: exporter, metrics: metrics)
        let started = ContinuousClock.now
        for _ in 0..<1000 {
            let span = try #require(tracer.serverSpan("GET /x", decision: tracer.decide(traceparent: nil, tracestate: nil)))
            span.end()
        }
        #expect(ContinuousClock.now - started < .milliseconds(500), "ending spans never waits on the exporter")
        #expect(tracer.processor.queued <= 8)
        let dropped = counter(metrics, "fbs_otel_dropped_spans_total")
        #expect(dropped >= 1000 - 8 - 4, "everything past the queue (and the batch being exported) is dropped and counted")
        exporter.release.signal()
        tracer.shutdown(timeout: 3)
    }

    @Test func aWorkingExporterGetsEverySpanInBatchesAndCountsThem() throws {
        let exporter = InMemorySpanExporter()
        let metrics = MetricsRegistry()
        let tracer = Tracer(configuration: Self.configuration(queue: 100, batch: 10, delay: 5), exporter: exporter, metrics: metrics)
        for index in 0..<25 {
            let span = try #require(tracer.root("webhook delivery"))
            span.set("index", index)
            span.end()
        }
        // Two full batches went without waiting for the delay; the rest goes on flush.
        #expect(tracer.flush(timeout: 2))
        #expect(exporter.spans.count == 25)
        #expect(counter(metrics, "fbs_otel_exported_spans_total") == 25)
        #expect(counter(metrics, "fbs_otel_dropped_spans_total") == 0)
        tracer.shutdown(timeout: 1)
        // After shutdown, spans are dropped (counted), never queued.
        try #require(tracer.root("late")).end()
        #expect(counter(metrics, "fbs_otel_dropped_spans_total") == 1)
    }

    @Test func unsampledRequestsMakeNoSpan() {
        var configuration = Self.configuration()
        configuration.sampler = .parentBased(root: .alwaysOff)
        let tracer = Tracer(configuration: configuration, exporter: InMemorySpanExporter(), metrics: nil)
        defer { tracer.shutdown(timeout: 1) }
        let decision = tracer.decide(traceparent: nil, tracestate: nil)
        #expect(!decision.isSampled)
        #expect(tracer.serverSpan("GET /x", decision: decision) == nil)
        #expect(tracer.child("graph me") == nil, "no current span, no child")
        let continued = tracer.decide(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", tracestate: nil)
        #expect(continued.isSampled, "a sampled parent is followed")
        let refused = tracer.decide(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", tracestate: nil)
        #expect(!refused.isSampled)
    }

    @Test func logLinesCarryTheCurrentSpansIDs() async throws {
        let tracer = Tracer(configuration: Self.configuration(), exporter: InMemorySpanExporter(), metrics: nil)
        defer { tracer.shutdown(timeout: 1) }
        let handler = InMemoryLogHandler()
        let logger = Logger(label: "test", handler: handler)
        let span = try #require(tracer.serverSpan("GET /x", decision: tracer.decide(traceparent: nil, tracestate: nil)))
        logger.info("outside")
        await tracer.withSpan(span) {
            logger.info("inside", ["n": 1])
            #expect(tracer.child("graph me")?.parentSpanID == span.context.spanID)
        }
        span.end()
        let records = handler.records
        #expect(records[0].metadata["trace_id"] == nil)
        #expect(records[1].metadata["trace_id"] == .string(span.context.traceID.hex))
        #expect(records[1].metadata["span_id"] == .string(span.context.spanID.hex))
        #expect(span.context.traceID.hex.count == 32 && span.context.traceID.hex == span.context.traceID.hex.lowercased())
    }
}
