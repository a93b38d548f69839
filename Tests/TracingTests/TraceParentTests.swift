import Testing

@testable import Tracing

/// `traceparent` parsing against the W3C Trace Context recommendation: every malformed shape is ignored (a new
/// trace), never an error.
@Suite struct TraceParentTests {
    static let valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    @Test func parsesAValidHeader() throws {
        let context = try #require(TraceParent.parse(Self.valid, traceState: "congo=t61rcWkgMzE"))
        #expect(context.traceID.hex == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(context.spanID.hex == "00f067aa0ba902b7")
        #expect(context.isSampled)
        #expect(context.isRemote)
        #expect(context.traceState == "congo=t61rcWkgMzE")
        #expect(TraceParent.header(for: context) == Self.valid)
    }

    @Test func readsTheUnsampledFlag() throws {
        let context = try #require(TraceParent.parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"))
        #expect(!context.isSampled)
    }

    @Test(arguments: [
        ("all-zero trace id", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"),
        ("all-zero span id", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"),
        ("bad hex in trace id", "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01"),
        ("bad hex in span id", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902bz-01"),
        ("bad hex in flags", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x"),
        ("upper-case trace id", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"),
        ("upper-case span id", "00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01"),
        ("upper-case version", "0A-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        ("short trace id", "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01"),
        ("long trace id", "00-4bf92f3577b34da6a3ce929d0e0e47366-00f067aa0ba902b7-01"),
        ("short span id", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-01"),
        ("short flags", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1"),
        ("version 00 with more after it", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra"),
        ("version ff", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        ("wrong separators", "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01"),
        ("empty", ""),
        ("garbage", "hello"),
        ("future version with no dash after the flags", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x"),
    ])
    func ignoresAMalformedHeader(_ why: String, _ header: String) {
        #expect(TraceParent.parse(header) == nil, "\(why)")
    }

    @Test func readsAFutureVersionAsVersion00() throws {
        let context = try #require(
            TraceParent.parse("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-holds"))
        #expect(context.traceID.hex == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(context.isSampled)
        #expect(TraceParent.parse("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01") != nil)
    }

    @Test func dropsAnOversizedTraceState() throws {
        let long = String(repeating: "a", count: TraceParent.maxTraceStateLength + 1)
        let context = try #require(TraceParent.parse(Self.valid, traceState: long))
        #expect(context.traceState == nil)
    }
}
