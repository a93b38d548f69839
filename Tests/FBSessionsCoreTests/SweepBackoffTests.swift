import FBSessionsCore
import Testing

/// The pause between sweep passes grows while Graph fails and snaps back when it answers (unit, no I/O).
@Suite struct SweepBackoffTests {
    static func failing() -> SweepReport {
        var report = SweepReport()
        report.deferred = 3
        report.stoppedEarly = true
        return report
    }

    @Test func doublesWhileGraphFailsUpToTheCapAndResets() {
        var backoff = SweepBackoff(interval: 60)
        #expect(backoff.next(after: SweepReport()) == 60)
        let pauses = (0..<6).map { _ in backoff.next(after: Self.failing()) }
        #expect(pauses == [120, 240, 480, 480, 480, 480])
        var healthy = SweepReport()
        healthy.validated = 1
        #expect(backoff.next(after: healthy) == 60)
        #expect(backoff.failedPasses == 0)
    }

    @Test func aPassThatOnlyDeferredCountsAsFailingButAMixedOneDoesNot() {
        var deferredOnly = SweepReport()
        deferredOnly.deferred = 2
        #expect(deferredOnly.graphFailing)
        var mixed = deferredOnly
        mixed.validated = 5
        #expect(!mixed.graphFailing)
        #expect(!SweepReport().graphFailing)
    }

    @Test func databaseErrorsKeepThePauseWithoutGrowingIt() {
        var backoff = SweepBackoff(interval: 2)
        _ = backoff.next(after: Self.failing())
        #expect(backoff.nextAfterError() == 4)
        #expect(backoff.nextAfterError() == 4)
        var fresh = SweepBackoff(interval: 2)
        #expect(fresh.nextAfterError() == 2)
    }

    @Test func manyFailuresNeverOverflow() {
        var backoff = SweepBackoff(interval: 1, maxFactor: 8)
        for _ in 0..<200 { _ = backoff.next(after: Self.failing()) }
        #expect(backoff.delay == 8)
    }
}
