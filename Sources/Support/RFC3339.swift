import Foundation

/// RFC 3339 UTC timestamps with millisecond precision, as the contract writes times: `2026-11-30T08:32:30.123Z`.
public enum RFC3339 {
    /// Formats a date.
    public static func string(from date: Date) -> String {
        let totalMillis = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        let (quotient, remainder) = totalMillis.quotientAndRemainder(dividingBy: 1000)
        var seconds = time_t(remainder < 0 ? quotient - 1 : quotient)
        let millis = Int(remainder < 0 ? remainder + 1000 : remainder)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), millis)
    }
}
