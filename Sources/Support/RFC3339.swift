import Foundation

/// RFC 3339 UTC timestamps with millisecond precision, as the contract writes times: `2026-11-30T08:32:30.123Z`.
public enum RFC3339 {
    /// Formats a date. Hand-rolled (civil-from-days arithmetic) because every session in every response carries
    /// several timestamps, and `String(format:)` with `gmtime_r` cost more than the rest of the encoding.
    public static func string(from date: Date) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        append(date, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Year, month, day and the milliseconds into that day (UTC).
    static func parts(of date: Date) -> (year: Int64, month: Int64, day: Int64, millisOfDay: Int64) {
        let totalMillis = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        let (days, dayMillis) = floorDivide(totalMillis, 86_400_000)
        let (year, month, day) = civil(fromDays: days)
        return (year, month, day, dayMillis)
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let (quotient, remainder) = value.quotientAndRemainder(dividingBy: divisor)
        return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
    }

    /// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian).
    private static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Appends ``string(from:)``'s text to `bytes` (the log line, ``JSONWriter/timestamp(_:)``).
    public static func append(_ date: Date, to bytes: inout [UInt8]) {
        let (year, month, day, millisOfDay) = parts(of: date)
        let seconds = millisOfDay / 1000
        appendDigits(year, 4, to: &bytes)
        // The rest, `-MM-DDTHH:MM:SS.mmmZ`, has a fixed width whatever the year: made on the stack, appended at once.
        var tail: (UInt64, UInt64, UInt32) = (0, 0, 0)  // 20 bytes
        withUnsafeMutableBytes(of: &tail) { buffer in
            func put(_ separator: Unicode.Scalar, _ value: Int64, _ width: Int, at offset: Int) {
                buffer[offset] = UInt8(ascii: separator)
                var rest = value
                for index in stride(from: offset + width, through: offset + 1, by: -1) {
                    buffer[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                    rest /= 10
                }
            }
            put("-", month, 2, at: 0)
            put("-", day, 2, at: 3)
            put("T", seconds / 3600, 2, at: 6)
            put(":", seconds / 60 % 60, 2, at: 9)
            put(":", seconds % 60, 2, at: 12)
            put(".", millisOfDay % 1000, 3, at: 15)
            buffer[19] = UInt8(ascii: "Z")
            bytes.append(contentsOf: buffer)
        }
    }

    /// At least `width` decimal digits of a non-negative value (a year past 9999 gets all its digits).
    private static func appendDigits(_ value: Int64, _ width: Int, to bytes: inout [UInt8]) {
        guard value >= 0 else {
            bytes.append(contentsOf: String(value).utf8)
            return
        }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
            UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { buffer in
            var count = 0
            var rest = value
            repeat {
                buffer[count] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
                count += 1
            } while rest > 0 || count < width
            for index in stride(from: count - 1, through: 0, by: -1) {
                bytes.append(buffer[index])
            }
        }
    }
}
