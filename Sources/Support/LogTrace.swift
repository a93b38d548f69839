import Synchronization

/// What a log line needs of the span a task is serving: its trace and span ids, in lower-case hex. The `Tracing`
/// module's span conforms; `Support` knows nothing else of traces.
public protocol LogTraceScope: AnyObject, Sendable {
    /// The trace id, 32 lower-case hex digits.
    var traceIDHex: String { get }
    /// The span id, 16 lower-case hex digits.
    var spanIDHex: String { get }
}

/// The span the current task is serving, if it is traced and sampled: the one task-local of tracing. The request's
/// server span sets it around the handler; child spans (Graph calls, database work) read it for their parent, and
/// ``Logger`` writes its ids as `trace_id` and `span_id` on every line logged meanwhile.
///
/// With tracing off, nothing reads it: ``isEnabled`` is false, and the logger checks that first.
public enum LogTrace {
    /// The current task's span, or nil.
    @TaskLocal public static var current: (any LogTraceScope)?

    private static let enabled = Atomic<Bool>(false)

    /// Whether any tracer was started in this process (then log lines look for ``current``).
    public static var isEnabled: Bool { enabled.load(ordering: .relaxed) }

    /// Called once by a tracer when it starts.
    public static func enable() { enabled.store(true, ordering: .relaxed) }

    /// The ids to add to a log line written now, when tracing is on and the task serves a sampled span.
    public static var currentIDs: (traceID: String, spanID: String)? {
        guard isEnabled, let scope = current else { return nil }
        return (scope.traceIDHex, scope.spanIDHex)
    }
}
