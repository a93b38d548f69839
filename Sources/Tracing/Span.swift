import Foundation
import Support

/// OTLP's span kinds (trace.proto `Span.SpanKind`): the few this service makes.
public enum SpanKind: Int, Sendable {
    /// Work inside the process.
    case `internal` = 1
    /// The service answering a request.
    case server = 2
    /// A call the service makes (Graph, the database, a webhook receiver).
    case client = 3
}

/// An attribute's value (common.proto `AnyValue`: the scalar kinds).
public enum AttributeValue: Sendable, Equatable {
    case string(String)
    case int(Int)
    case bool(Bool)
    case double(Double)
}

/// A span's status (trace.proto `Status.StatusCode`).
public enum SpanStatusCode: Int, Sendable {
    case unset = 0
    case ok = 1
    case error = 2
}

/// A finished span, as the processor queues it and the encoder writes it.
public struct SpanData: Sendable {
    public let name: String
    public let kind: SpanKind
    public let context: SpanContext
    public let parentSpanID: SpanID?
    /// Unix time in nanoseconds.
    public let start: UInt64
    /// Unix time in nanoseconds.
    public let end: UInt64
    public let attributes: [(String, AttributeValue)]
    public let status: SpanStatusCode
    /// A fixed description of the failure (never an error's text, which may quote a URL or a value).
    public let statusMessage: String?
    public let links: [SpanContext]

    /// The value of attribute `key`, if set.
    public func attribute(_ key: String) -> AttributeValue? {
        attributes.last { $0.0 == key }?.1
    }
}

/// A span being recorded: made only for sampled traces (an unsampled request has no span at all, so the code that
/// would annotate it does a nil check). Ended once by ``end()``, which hands it to the exporter's queue.
///
/// Thread safety: its mutable parts are one `Locked` state; a span is usually touched by one task.
public final class Span: LogTraceScope, Sendable {
    /// Its ids and flags, for children and `traceparent`.
    public let context: SpanContext
    public let name: String
    public let kind: SpanKind
    public let parentSpanID: SpanID?
    let start: UInt64
    private let processor: BatchSpanProcessor
    private let state: Locked<State>
    public let traceIDHex: String
    public let spanIDHex: String

    private struct State {
        var attributes: [(String, AttributeValue)] = []
        var status = SpanStatusCode.unset
        var statusMessage: String?
        var links: [SpanContext] = []
        var ended = false
    }

    init(
        name: String, kind: SpanKind, context: SpanContext, parentSpanID: SpanID?, start: UInt64,
        processor: BatchSpanProcessor
    ) {
        self.name = name
        self.kind = kind
        self.context = context
        self.parentSpanID = parentSpanID
        self.start = start
        self.processor = processor
        self.state = Locked(State())
        traceIDHex = context.traceID.hex
        spanIDHex = context.spanID.hex
    }

    /// Sets one attribute (a later value for the same key wins).
    public func set(_ key: String, _ value: AttributeValue) {
        state.withLock { $0.attributes.append((key, value)) }
    }

    /// Sets a string attribute.
    public func set(_ key: String, _ value: String) { set(key, .string(value)) }
    /// Sets an integer attribute.
    public func set(_ key: String, _ value: Int) { set(key, .int(value)) }

    /// Marks the span failed; `message` must be a fixed description, never an error's text.
    public func setError(_ message: String? = nil) {
        state.withLock {
            $0.status = .error
            $0.statusMessage = message
        }
    }

    /// Links another trace's span (a batch links the requests it served besides its parent's).
    public func addLink(_ context: SpanContext) {
        state.withLock { $0.links.append(context) }
    }

    /// Ends the span and queues it for export; a second call does nothing.
    public func end() {
        let end = Clock.unixNanoseconds()
        let data: SpanData? = state.withLock { state in
            guard !state.ended else { return nil }
            state.ended = true
            var attributes: [(String, AttributeValue)] = []
            attributes.reserveCapacity(state.attributes.count)
            for (key, value) in state.attributes {
                if let index = attributes.firstIndex(where: { $0.0 == key }) {
                    attributes[index].1 = value
                } else {
                    attributes.append((key, value))
                }
            }
            return SpanData(
                name: name, kind: kind, context: context, parentSpanID: parentSpanID, start: start, end: end,
                attributes: attributes, status: state.status, statusMessage: state.statusMessage, links: state.links)
        }
        if let data { processor.append(data) }
    }
}

/// Wall-clock time for spans.
enum Clock {
    static func unixNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
