extension Duration {
    /// The duration in seconds as a `Double`.
    var postgresSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// The duration in whole milliseconds, rounded up, never negative.
    var postgresMilliseconds: Int {
        max(0, Int((postgresSeconds * 1000).rounded(.up)))
    }
}
