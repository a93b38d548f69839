import Testing

@testable import Tracing

@Suite struct SamplerTests {
    let parentSampled = SpanContext(
        traceID: TraceID(high: 1, low: 2), spanID: SpanID(3), flags: 1, isRemote: true)
    let parentNotSampled = SpanContext(
        traceID: TraceID(high: 1, low: 2), spanID: SpanID(3), flags: 0, isRemote: true)

    @Test func parentBasedFollowsTheParent() {
        let sampler = Sampler.parentBased(root: .alwaysOff)
        #expect(sampler.shouldSample(parent: parentSampled, traceID: parentSampled.traceID))
        #expect(!Sampler.parentBased(root: .alwaysOn).shouldSample(parent: parentNotSampled, traceID: parentNotSampled.traceID))
        #expect(!sampler.shouldSample(parent: nil, traceID: TraceID(high: 9, low: 9)))
        #expect(Sampler.parentBased(root: .alwaysOn).shouldSample(parent: nil, traceID: TraceID(high: 9, low: 9)))
    }

    @Test func ratioDecidesByTheTraceIDsLow56Bits() {
        // Randomness at the very top of the 56 bits: sampled at any ratio above 0.
        let high = TraceID(high: 0, low: 0x00FF_FFFF_FFFF_FFFF)
        // Randomness 0: sampled only at ratio 1.
        let low = TraceID(high: 0xFFFF_FFFF_FFFF_FFFF, low: 0xFF00_0000_0000_0000)
        #expect(Sampler.traceIDRatio(0.0001).shouldSample(parent: nil, traceID: high))
        #expect(!Sampler.traceIDRatio(0.9999).shouldSample(parent: nil, traceID: low))
        #expect(Sampler.traceIDRatio(1).shouldSample(parent: nil, traceID: low))
        #expect(!Sampler.traceIDRatio(0).shouldSample(parent: nil, traceID: high))
        // Half way: randomness 2^55 is sampled at 0.5, one less is not.
        #expect(Sampler.traceIDRatio(0.5).shouldSample(parent: nil, traceID: TraceID(high: 0, low: 1 << 55)))
        #expect(!Sampler.traceIDRatio(0.5).shouldSample(parent: nil, traceID: TraceID(high: 0, low: (1 << 55) - 1)))
    }

    @Test func ratioSamplesAboutTheRatioOfGeneratedIDsAndIsMonotone() {
        var atTenth = 0
        var atHalf = 0
        for _ in 0..<20_000 {
            let id = IDGenerator.traceID()
            let tenth = Sampler.traceIDRatio(0.1).shouldSample(parent: nil, traceID: id)
            let half = Sampler.traceIDRatio(0.5).shouldSample(parent: nil, traceID: id)
            if tenth { atTenth += 1; #expect(half, "a trace sampled at 0.1 is sampled at 0.5") }
            if half { atHalf += 1 }
        }
        #expect((1_600...2_400).contains(atTenth))
        #expect((9_200...10_800).contains(atHalf))
    }

    @Test func namesAreTheSpecifications() {
        #expect(Sampler.named("always_on", ratio: 1) == .alwaysOn)
        #expect(Sampler.named("always_off", ratio: 1) == .alwaysOff)
        #expect(Sampler.named("traceidratio", ratio: 0.25) == .traceIDRatio(0.25))
        #expect(Sampler.named("parentbased_always_on", ratio: 1) == .parentBased(root: .alwaysOn))
        #expect(Sampler.named("parentbased_always_off", ratio: 1) == .parentBased(root: .alwaysOff))
        #expect(Sampler.named("parentbased_traceidratio", ratio: 0.5) == .parentBased(root: .traceIDRatio(0.5)))
        #expect(Sampler.named("jaeger_remote", ratio: 1) == nil)
    }
}
