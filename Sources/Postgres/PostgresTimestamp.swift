import Foundation

/// Converts between `Date` and PostgreSQL timestamp text, with microsecond precision and no formatter objects
/// (so it is thread-safe and independent of the process locale and time zone).
enum PostgresTimestamp {
    private static let microsecondsPerDay: Int64 = 86_400_000_000

    /// Formats `date` as RFC 3339 in UTC with six fractional digits, for example `2026-11-30T08:32:30.123456Z`.
    ///
    /// - Parameter date: The instant; rounded to the nearest microsecond.
    /// - Returns: The text.
    static func format(_ date: Date) -> String {
        let micros = Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
        let (days, dayMicros) = floorDivide(micros, microsecondsPerDay)
        let (year, month, day) = civil(fromDays: Int(days))
        let seconds = Int(dayMicros / 1_000_000)
        let fraction = Int(dayMicros % 1_000_000)
        return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T" + pad(seconds / 3600, 2) + ":"
            + pad(seconds / 60 % 60, 2) + ":" + pad(seconds % 60, 2) + "." + pad(fraction, 6) + "Z"
    }

    /// Parses PostgreSQL's ISO-style output: `YYYY-MM-DD HH:MM:SS[.ffffff][±HH[:MM[:SS]]][ BC]`; a `T`
    /// separator and a `Z` suffix are accepted too. Without an offset the time is taken as UTC.
    ///
    /// - Parameter text: The timestamptz or timestamp output.
    /// - Returns: The instant.
    /// - Throws: `PostgresError` with code `.decodingFailed` for anything else.
    static func parse(_ text: String) throws -> Date {
        switch text {
        case "infinity": return .distantFuture
        case "-infinity": return .distantPast
        default: break
        }
        var scanner = Scanner(Array(text.utf8))
        guard var year = scanner.number(minDigits: 4, maxDigits: 9), scanner.skip("-"),
            let month = scanner.number(minDigits: 2, maxDigits: 2), scanner.skip("-"),
            let day = scanner.number(minDigits: 2, maxDigits: 2), scanner.skip(" ") || scanner.skip("T"),
            let hour = scanner.number(minDigits: 2, maxDigits: 2), scanner.skip(":"),
            let minute = scanner.number(minDigits: 2, maxDigits: 2), scanner.skip(":"),
            let second = scanner.number(minDigits: 2, maxDigits: 2),
            (1...12).contains(month), (1...31).contains(day), hour <= 24, minute < 60, second <= 60
        else { throw PostgresError.cannotDecode(Date.self) }
        var fraction = 0
        if scanner.skip(".") {
            guard let digits = scanner.digits(), !digits.isEmpty else { throw PostgresError.cannotDecode(Date.self) }
            // Keep microseconds; round on the seventh digit if there is one.
            let padded = (digits + Array(repeating: UInt8(ascii: "0"), count: 7)).prefix(7)
            let seven = padded.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
            fraction = (seven + 5) / 10
        }
        var offsetSeconds = 0
        if scanner.skip("Z") {
            offsetSeconds = 0
        } else if let sign = scanner.sign() {
            guard let hours = scanner.number(minDigits: 2, maxDigits: 2) else {
                throw PostgresError.cannotDecode(Date.self)
            }
            var total = hours * 3600
            if scanner.skip(":") {
                guard let minutes = scanner.number(minDigits: 2, maxDigits: 2) else {
                    throw PostgresError.cannotDecode(Date.self)
                }
                total += minutes * 60
                if scanner.skip(":") {
                    guard let seconds = scanner.number(minDigits: 2, maxDigits: 2) else {
                        throw PostgresError.cannotDecode(Date.self)
                    }
                    total += seconds
                }
            }
            offsetSeconds = sign * total
        }
        if scanner.skip(" BC") {
            year = 1 - year
        }
        guard scanner.isAtEnd else { throw PostgresError.cannotDecode(Date.self) }
        let days = Int64(days(fromYear: year, month: month, day: day))
        let seconds = Int64(hour * 3600 + minute * 60 + second - offsetSeconds)
        let micros = days * microsecondsPerDay + seconds * 1_000_000 + Int64(fraction)
        return Date(timeIntervalSince1970: Double(micros) / 1_000_000)
    }

    /// Zero-pads `value` to `width` digits (a leading `-` for negative years).
    private static func pad(_ value: Int, _ width: Int) -> String {
        let digits = String(abs(value))
        let padded = String(repeating: "0", count: max(0, width - digits.count)) + digits
        return value < 0 ? "-" + padded : padded
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let remainder = value % divisor
        return remainder < 0 ? (value / divisor - 1, remainder + divisor) : (value / divisor, remainder)
    }

    /// Days since 1970-01-01 for a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
    static func days(fromYear year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's `civil_from_days`).
    static func civil(fromDays count: Int) -> (year: Int, month: Int, day: Int) {
        let z = count + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// A forward-only reader over ASCII bytes.
    private struct Scanner {
        let bytes: [UInt8]
        var position = 0

        init(_ bytes: [UInt8]) {
            self.bytes = bytes
        }

        var isAtEnd: Bool { position == bytes.count }

        mutating func skip(_ literal: StaticString) -> Bool {
            let count = literal.utf8CodeUnitCount
            guard position + count <= bytes.count else { return false }
            let matches = literal.withUTF8Buffer { buffer in
                buffer.elementsEqual(bytes[position..<position + count])
            }
            if matches {
                position += count
            }
            return matches
        }

        mutating func sign() -> Int? {
            if skip("+") { return 1 }
            if skip("-") { return -1 }
            return nil
        }

        mutating func digits() -> [UInt8]? {
            let start = position
            while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) {
                position += 1
            }
            return Array(bytes[start..<position])
        }

        mutating func number(minDigits: Int, maxDigits: Int) -> Int? {
            let start = position
            guard let digits = digits(), (minDigits...maxDigits).contains(digits.count) else {
                position = start
                return nil
            }
            return digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        }
    }
}
