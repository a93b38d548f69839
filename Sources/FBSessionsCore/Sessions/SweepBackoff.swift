/// The pause between two passes of the background sweep in `serve`: the configured interval while Graph answers,
/// doubling after each pass in which Graph could not be asked (``SweepReport/graphFailing``), up to `maxFactor`
/// times the interval; back to the interval after the first pass Graph answers.
///
/// A pass already stops early when most of a batch is deferred, but without this the loop would start a new
/// failing pass every interval for the whole of an outage (a few Graph calls each time, and on every instance).
public struct SweepBackoff: Sendable, Equatable {
    /// The pause while Graph answers (`FBS_SWEEP_INTERVAL`).
    public let interval: Double
    /// The longest pause, as a multiple of `interval`.
    public let maxFactor: Double
    /// Passes in a row in which Graph could not be asked.
    public private(set) var failedPasses = 0

    /// Creates the back-off for a loop with this interval.
    public init(interval: Double, maxFactor: Double = 8) {
        self.interval = interval
        self.maxFactor = max(1, maxFactor)
    }

    /// Records a pass and returns the seconds to wait before the next one.
    public mutating func next(after report: SweepReport) -> Double {
        failedPasses = report.graphFailing ? failedPasses + 1 : 0
        return delay
    }

    /// Records a pass that failed before reaching Graph (the database was down) and returns the pause: the
    /// interval, without growing, since Graph is not to blame.
    public mutating func nextAfterError() -> Double {
        delay
    }

    /// The current pause.
    public var delay: Double {
        guard failedPasses > 0 else { return interval }
        let factor = failedPasses >= 30 ? maxFactor : min(maxFactor, Double(1 << failedPasses))
        return interval * factor
    }
}
