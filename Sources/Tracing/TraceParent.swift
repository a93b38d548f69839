/// The W3C Trace Context headers (https://www.w3.org/TR/trace-context/, "traceparent Header" and "tracestate
/// Header"): parsed strictly, written for outgoing calls.
public enum TraceParent {
    /// The longest `tracestate` kept: the recommendation's 32 members of at most 256 characters would allow more, but
    /// it lets a vendor drop what it cannot keep, and an attacker's header must not grow every span.
    public static let maxTraceStateLength = 512

    /// The caller's context from its `traceparent` (and `tracestate`), or nil when the header is absent or invalid;
    /// an invalid header means a new trace, as the recommendation says, never an error.
    ///
    /// Version `00`: exactly `00-<32 hex>-<16 hex>-<2 hex>`, lower-case, ids not all zero. Version `ff` is invalid.
    /// A higher version is read the way the recommendation tells a version-00 parser to: the first 55 characters as
    /// version 00, followed by nothing or by `-` and more.
    public static func parse(_ header: String?, traceState: String? = nil) -> SpanContext? {
        guard let header else { return nil }
        let bytes = Array(header.utf8)
        guard bytes.count >= 55, let version = Hex.parse(bytes, from: 0, count: 2) else { return nil }
        if version == 0xff { return nil }
        if version == 0 {
            guard bytes.count == 55 else { return nil }
        } else if bytes.count > 55, bytes[55] != UInt8(ascii: "-") {
            return nil
        }
        guard bytes[2] == UInt8(ascii: "-"), bytes[35] == UInt8(ascii: "-"), bytes[52] == UInt8(ascii: "-"),
            let high = Hex.parse(bytes, from: 3), let low = Hex.parse(bytes, from: 19),
            let span = Hex.parse(bytes, from: 36), let flags = Hex.parse(bytes, from: 53, count: 2)
        else { return nil }
        let traceID = TraceID(high: high, low: low)
        let spanID = SpanID(span)
        guard traceID.isValid, spanID.isValid else { return nil }
        var state: String?
        if let traceState, !traceState.isEmpty, traceState.utf8.count <= maxTraceStateLength {
            state = traceState
        }
        // Only the sampled bit has a meaning we act on; unknown bits of a future version are not passed on.
        let kept = version == 0 ? UInt8(flags) : UInt8(flags) & 1
        return SpanContext(traceID: traceID, spanID: spanID, flags: kept, traceState: state, isRemote: true)
    }

    /// The `traceparent` value for a call made inside `context` (version 00).
    public static func header(for context: SpanContext) -> String {
        "00-" + context.traceID.hex + "-" + context.spanID.hex + (context.isSampled ? "-01" : "-00")
    }
}
