import Foundation
import Support

/// A request's sampling decision, made once when its head arrives (``Tracer/decide(traceparent:tracestate:)``): the
/// caller's context if it sent a valid `traceparent`, the trace id the request's span will have, and whether it is
/// sampled. Made before the fast path looks at the request, so that a sampled request goes to the router (which
/// traces) and the router does not decide a second time.
public struct TraceDecision: Sendable {
    /// The caller's span, from `traceparent`.
    public let parent: SpanContext?
    /// The trace the request's span joins or starts.
    public let traceID: TraceID
    /// Whether the request's span is recorded and exported.
    public let isSampled: Bool
    /// When the head arrived (Unix nanoseconds): the server span's start.
    let start: UInt64
}

/// Makes spans and hands finished ones to a bounded queue that one thread of its own exports
/// (``BatchSpanProcessor``). One per process, built by the service's assembly when tracing is configured; every
/// component that makes spans holds it as an optional, so with tracing off the whole cost is a nil check.
///
/// The current span travels as the task-local ``LogTrace/current`` (the logger reads the same one for `trace_id`
/// and `span_id`): ``withSpan(_:_:)`` sets it around work, ``current`` reads it.
public final class Tracer: Sendable {
    /// Decides which traces are recorded.
    public let sampler: Sampler
    let processor: BatchSpanProcessor

    /// A tracer exporting through `exporter`, with the queue and schedule of `configuration`, counting its drops
    /// and exports in `counters`. Starts the export thread, and turns on the trace ids of log lines
    /// (``LogTrace/enable()``).
    public init(configuration: TracingConfiguration, exporter: any SpanExporter, counters: TracingCounters?) {
        sampler = configuration.sampler
        processor = BatchSpanProcessor(
            exporter: exporter, maxQueueSize: configuration.maxQueueSize,
            maxBatchSize: configuration.maxExportBatchSize, scheduleDelay: configuration.scheduleDelay,
            exportTimeout: configuration.batchExportTimeout, dropped: counters?.dropped, exported: counters?.exported)
        LogTrace.enable()
    }

    /// A tracer whose counters are registered in `metrics` now.
    public convenience init(configuration: TracingConfiguration, exporter: any SpanExporter, metrics: MetricsRegistry?) {
        self.init(configuration: configuration, exporter: exporter, counters: metrics.map(TracingCounters.init))
    }

    /// The span the current task serves, if traced and sampled.
    public static var current: Span? { LogTrace.current as? Span }

    /// The sampling decision for a request with these headers. Cheap when not sampled: a header parse, two ids
    /// from a counter and a compare.
    public func decide(traceparent: String?, tracestate: String?) -> TraceDecision {
        let parent = TraceParent.parse(traceparent, traceState: tracestate)
        let traceID = parent?.traceID ?? IDGenerator.traceID()
        let sampled = sampler.shouldSample(parent: parent, traceID: traceID)
        return TraceDecision(parent: parent, traceID: traceID, isSampled: sampled, start: sampled ? Clock.unixNanoseconds() : 0)
    }

    /// The server span of a request decided sampled, or nil when it was not.
    public func serverSpan(_ name: String, decision: TraceDecision) -> Span? {
        guard decision.isSampled else { return nil }
        let context = SpanContext(
            traceID: decision.traceID, spanID: IDGenerator.spanID(), flags: 1, traceState: decision.parent?.traceState)
        return Span(
            name: name, kind: .server, context: context, parentSpanID: decision.parent?.spanID, start: decision.start,
            processor: processor)
    }

    /// A child of `parent` (by default the current task's span), or nil when there is none: work done for no
    /// traced request (the sweep, the listener) makes no spans.
    public func child(_ name: String, kind: SpanKind = .client, of parent: Span? = Tracer.current) -> Span? {
        guard let parent else { return nil }
        return child(name, kind: kind, of: parent.context)
    }

    /// A child of a span known by its context (a batch's parent, which is another task's span).
    public func child(_ name: String, kind: SpanKind = .client, of parent: SpanContext) -> Span {
        let context = SpanContext(
            traceID: parent.traceID, spanID: IDGenerator.spanID(), flags: parent.flags | 1, traceState: parent.traceState)
        return Span(
            name: name, kind: kind, context: context, parentSpanID: parent.spanID, start: Clock.unixNanoseconds(),
            processor: processor)
    }

    /// A span that starts a trace of its own (a webhook delivery), or nil when the sampler says no.
    public func root(_ name: String, kind: SpanKind = .client) -> Span? {
        let traceID = IDGenerator.traceID()
        guard sampler.shouldSample(parent: nil, traceID: traceID) else { return nil }
        let context = SpanContext(traceID: traceID, spanID: IDGenerator.spanID(), flags: 1)
        return Span(name: name, kind: kind, context: context, parentSpanID: nil, start: Clock.unixNanoseconds(), processor: processor)
    }

    /// Runs `body` with `span` as the current task's span.
    public func withSpan<T>(_ span: Span, _ body: () async throws -> T) async rethrows -> T {
        try await LogTrace.$current.withValue(span, operation: body)
    }

    /// Exports what is queued now and waits for it, up to `timeout` seconds; true when the queue emptied.
    @discardableResult
    public func flush(timeout: Double) -> Bool {
        processor.flush(timeout: timeout)
    }

    /// Exports what is queued (within `timeout` seconds) and stops the export thread; spans ended later are dropped.
    public func shutdown(timeout: Double) {
        processor.shutdown(timeout: timeout)
    }
}

/// The exporter's two counters. The service registers them whether tracing is on or not, so that `/metrics` (and
/// the dashboard reading it) always has them: 0 while off.
public struct TracingCounters: Sendable {
    /// `fbs_otel_dropped_spans_total`.
    public let dropped: CounterSeries
    /// `fbs_otel_exported_spans_total`.
    public let exported: CounterSeries

    /// Registers both in `metrics`.
    public init(registeringIn metrics: MetricsRegistry) {
        dropped = metrics.counter(
            "fbs_otel_dropped_spans_total",
            help: "Spans dropped: the export queue was full, or the collector failed, timed out or was gone."
        ).series()
        exported = metrics.counter("fbs_otel_exported_spans_total", help: "Spans the collector accepted.").series()
    }
}
