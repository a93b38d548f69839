/// The standard samplers of the OpenTelemetry SDK specification
/// (https://opentelemetry.io/docs/specs/otel/trace/sdk/#built-in-samplers), named as `OTEL_TRACES_SAMPLER` names
/// them.
public enum Sampler: Sendable, Equatable {
    /// Every trace.
    case alwaysOn
    /// No trace.
    case alwaysOff
    /// A fraction of traces, decided by the trace id alone (so every process of a trace decides alike).
    case traceIDRatio(Double)
    /// The parent's decision when there is a parent, `root` for a new trace.
    indirect case parentBased(root: Sampler)

    /// Whether a span of trace `traceID`, under `parent` (nil for a new trace), is recorded and exported.
    ///
    /// The ratio rule is the specification's TraceIdRatioBased algorithm: the randomness is the trace id's
    /// rightmost 56 bits, the rejection threshold `(1 - ratio) × 2^56`; sampled when randomness ≥ threshold.
    /// Deterministic, and a trace sampled at one ratio is sampled at every higher one.
    public func shouldSample(parent: SpanContext?, traceID: TraceID) -> Bool {
        switch self {
        case .alwaysOn: return true
        case .alwaysOff: return false
        case .traceIDRatio(let ratio): return Self.ratioSamples(traceID, ratio: ratio)
        case .parentBased(let root):
            if let parent { return parent.isSampled }
            return root.shouldSample(parent: nil, traceID: traceID)
        }
    }

    static func ratioSamples(_ traceID: TraceID, ratio: Double) -> Bool {
        if ratio >= 1 { return true }
        if ratio <= 0 { return false }
        let randomness = traceID.low & 0x00FF_FFFF_FFFF_FFFF
        let threshold = UInt64(((1 - ratio) * 72_057_594_037_927_936).rounded(.down))  // × 2^56
        return randomness >= threshold
    }

    /// The sampler `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` name, or nil for a name not in the list.
    public static func named(_ name: String, ratio: Double) -> Sampler? {
        switch name {
        case "always_on": .alwaysOn
        case "always_off": .alwaysOff
        case "traceidratio": .traceIDRatio(ratio)
        case "parentbased_always_on": .parentBased(root: .alwaysOn)
        case "parentbased_always_off": .parentBased(root: .alwaysOff)
        case "parentbased_traceidratio": .parentBased(root: .traceIDRatio(ratio))
        default: nil
        }
    }
}
