/// What Graph's `x-app-usage` header said: whole-number percentages of the app's rate limit (docs/facebook-graph.md
/// §7.6). Calls may be throttled when `totalTime` or `totalCPUTime` reaches 100.
public struct GraphAppUsage: Sendable, Hashable, CustomStringConvertible {
    /// `call_count`, percent.
    public var callCount: Int?
    /// `total_time`, percent.
    public var totalTime: Int?
    /// `total_cputime`, percent.
    public var totalCPUTime: Int?

    /// Creates a usage value.
    /// - Parameters:
    ///   - callCount: `call_count`.
    ///   - totalTime: `total_time`.
    ///   - totalCPUTime: `total_cputime`.
    public init(callCount: Int? = nil, totalTime: Int? = nil, totalCPUTime: Int? = nil) {
        self.callCount = callCount
        self.totalTime = totalTime
        self.totalCPUTime = totalCPUTime
    }

    /// The highest of the three percentages, or `nil` when none was given.
    public var highestPercent: Int? {
        [callCount, totalTime, totalCPUTime].compactMap { $0 }.max()
    }

    /// For example `call_count=28 total_time=25 total_cputime=25` (missing values left out).
    public var description: String {
        let parts = [("call_count", callCount), ("total_time", totalTime), ("total_cputime", totalCPUTime)]
        return parts.compactMap { name, value in value.map { "\(name)=\($0)" } }.joined(separator: " ")
    }
}
