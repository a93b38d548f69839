import Synchronization

/// A W3C trace id: 16 bytes, never all zero (https://www.w3.org/TR/trace-context/#trace-id).
public struct TraceID: Hashable, Sendable {
    /// The first 8 bytes, big-endian.
    public let high: UInt64
    /// The last 8 bytes, big-endian: what the ratio sampler compares (``Sampler``).
    public let low: UInt64

    /// An id from its two halves.
    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// False for the all-zero id, which the recommendation makes invalid.
    public var isValid: Bool { high != 0 || low != 0 }

    /// 32 lower-case hex digits.
    public var hex: String { Hex.string(high) + Hex.string(low) }

    /// The 16 bytes, as OTLP's `trace_id` carries them.
    public var bytes: [UInt8] { Hex.bytes(high) + Hex.bytes(low) }
}

/// A W3C parent id / span id: 8 bytes, never all zero.
public struct SpanID: Hashable, Sendable {
    /// The 8 bytes, big-endian.
    public let value: UInt64

    /// An id from its bytes as a big-endian number.
    public init(_ value: UInt64) { self.value = value }

    /// False for the all-zero id.
    public var isValid: Bool { value != 0 }

    /// 16 lower-case hex digits.
    public var hex: String { Hex.string(value) }

    /// The 8 bytes, as OTLP's `span_id` carries them.
    public var bytes: [UInt8] { Hex.bytes(value) }
}

/// What identifies a span to its children and to other processes: ids, the sampled flag and `tracestate`.
public struct SpanContext: Hashable, Sendable {
    /// The trace.
    public let traceID: TraceID
    /// The span.
    public let spanID: SpanID
    /// The trace flags byte; bit 0 is `sampled`.
    public let flags: UInt8
    /// The caller's `tracestate`, kept as it came (bounded by ``TraceParent/maxTraceStateLength``).
    public let traceState: String?
    /// True when it came from another process (an incoming `traceparent`).
    public let isRemote: Bool

    /// A context.
    public init(traceID: TraceID, spanID: SpanID, flags: UInt8, traceState: String? = nil, isRemote: Bool = false) {
        self.traceID = traceID
        self.spanID = spanID
        self.flags = flags
        self.traceState = traceState
        self.isRemote = isRemote
    }

    /// The `sampled` flag.
    public var isSampled: Bool { flags & 1 == 1 }
}

/// Random ids for new traces and spans: SplitMix64 over a per-process random seed and an atomic counter. No system
/// call and no lock per id, and the outputs are uniformly spread, which the ratio sampler needs of trace ids.
enum IDGenerator {
    private static let seed: UInt64 = {
        var generator = SystemRandomNumberGenerator()
        return generator.next()
    }()
    private static let counter = Atomic<UInt64>(0)

    /// A non-zero 64-bit value.
    static func next() -> UInt64 {
        while true {
            let step = counter.wrappingAdd(1, ordering: .relaxed).newValue
            let value = mix(seed &+ step &* 0x9E37_79B9_7F4A_7C15)
            if value != 0 { return value }
        }
    }

    static func traceID() -> TraceID { TraceID(high: next(), low: next()) }
    static func spanID() -> SpanID { SpanID(next()) }

    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Lower-case hex of ids.
enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    static func string(_ value: UInt64) -> String {
        String(unsafeUninitializedCapacity: 16) { buffer in
            for index in 0..<16 {
                buffer[index] = digits[Int((value >> UInt64(60 - 4 * index)) & 0xF)]
            }
            return 16
        }
    }

    static func bytes(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> UInt64(56 - 8 * $0)) }
    }

    /// The value of 16 lower-case hex digits at `start` of `bytes`, or nil for anything else (upper case too: the
    /// recommendation allows only lower case).
    static func parse(_ bytes: [UInt8], from start: Int, count: Int = 16) -> UInt64? {
        var value: UInt64 = 0
        for index in start..<(start + count) {
            let byte = bytes[index]
            let nibble: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte - UInt8(ascii: "a") + 10
            default: return nil
            }
            value = value << 4 | UInt64(nibble)
        }
        return value
    }
}
