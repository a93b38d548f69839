import FBSessionsCore
import Foundation
import Postgres
import TestSupport
import Testing
import Tracing

@testable import FBSessionsStorage

/// A batched read is one `postgresql batch` span, under the first traced request it serves, linked to the other
/// traced ones, with the number of requests served; a batch that serves no traced request makes no span.
@Suite(.serialized, .enabled(if: TestDatabase.isEnabled))
struct ReadBatcherTracingTests {
    @Test func aBatchIsOneSpanUnderItsFirstTracedRequestWithTheOthersLinked() async throws {
        let pool = PostgresPool(configuration: .init(connectionString: try TestDatabase.requireServerURL(), size: 2))
        defer { pool.shutdown() }
        var configuration = TracingConfiguration(endpoint: "http://127.0.0.1:9/v1/traces")
        configuration.scheduleDelay = 0.02
        let exporter = InMemorySpanExporter()
        let tracer = Tracer(configuration: configuration, exporter: exporter, metrics: nil)
        defer { tracer.shutdown(timeout: 1) }
        var database = Database(pool: pool)
        database.tracer = tracer
        let gate = ReadBatcherDeadlineTests.Gate()
        let batcher = ReadBatcher<Int, Int>(database: database, maxBatch: 8, maxInFlight: 1) { _, items in
            if items.contains(0) { gate.wait() }  // holds the only batch slot, so that the others queue
            return items.map { .success($0 * 2) }
        }
        let first = Task { try await batcher.load(0) }
        try await Task.sleep(for: .milliseconds(100))
        let requests = try (1...3).map { _ in
            try #require(tracer.serverSpan("GET /x", decision: tracer.decide(traceparent: nil, tracestate: nil)))
        }
        async let one = tracer.withSpan(requests[0]) { try await batcher.load(1) }
        async let two = tracer.withSpan(requests[1]) { try await batcher.load(2) }
        async let three = tracer.withSpan(requests[2]) { try await batcher.load(3) }
        async let untraced = batcher.load(4)
        try await Task.sleep(for: .milliseconds(100))
        gate.release()
        let answers = try await [first.value, one, two, three, untraced]
        #expect(answers == [0, 2, 4, 6, 8])
        #expect(tracer.flush(timeout: 2))
        let batches = exporter.spans.filter { $0.name == "postgresql batch" }
        #expect(batches.count == 1, "the first batch served no traced request")
        let batch = try #require(batches.first)
        #expect(batch.kind == .client)
        #expect(batch.attribute("db.system.name") == .string("postgresql"))
        #expect(batch.attribute("db.operation.batch.size") == .int(4))
        let ids = Set(requests.map(\.context.spanID))
        let parent = try #require(batch.parentSpanID)
        #expect(ids.contains(parent))
        let parentRequest = try #require(requests.first { $0.context.spanID == parent })
        #expect(batch.context.traceID == parentRequest.context.traceID)
        #expect(Set(batch.links.map(\.spanID)) == ids.subtracting([parent]))
    }
}
