/// Levels for the `x-app-usage` header, whole percentages.
public struct AppUsage: Sendable, Equatable {
    /// `call_count`.
    public var callCount: Int
    /// `total_cputime`.
    public var totalCPUTime: Int
    /// `total_time`.
    public var totalTime: Int

    /// Creates usage levels.
    public init(callCount: Int = 0, totalCPUTime: Int = 0, totalTime: Int = 0) {
        self.callCount = callCount
        self.totalCPUTime = totalCPUTime
        self.totalTime = totalTime
    }

    /// The header value, e.g. `{"call_count":28,"total_cputime":25,"total_time":25}`.
    var headerValue: String {
        JSONValue.object([
            ("call_count", .int(Int64(callCount))), ("total_cputime", .int(Int64(totalCPUTime))),
            ("total_time", .int(Int64(totalTime))),
        ]).text
    }
}
