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
        var text = text
        return try text.withUTF8 { try parse($0) }
    }

    /// ``parse(_:)-(String)`` over the bytes of the text, as libpq hands them over: no copy, no allocation.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws -> Date {
        if bytes.elementsEqual("infinity".utf8) { return .distantFuture }
        if bytes.elementsEqual("-infinity".utf8) { return .distantPast }
        var scanner = Scanner(bytes)
        guard var year = scanner.number(minDigits: 4, maxDigits: 9), scanner.skip(UInt8(ascii: "-")),
            let month = scanner.number(minDigits: 2, maxDigits: 2), scanner.skip(UInt8(ascii: "-")),
            let day = scanner.number(minDigits: 2, maxDigits: 2),
            scanner.skip(UInt8(ascii: " ")) || scanner.skip(UInt8(ascii: "T")),
            let hour = scanner.number(minDigits: 2, maxDigits: 2), scanner.skip(UInt8(ascii: ":")),
            let minute = scanner.number(minDigits: 2, maxDigits: 2), scanner.skip(UInt8(ascii: ":")),
            let second = scanner.number(minDigits: 2, maxDigits: 2),
            (1...12).contains(month), (1...31).contains(day), hour <= 24, minute < 60, second <= 60
        else { throw PostgresError.cannotDecode(Date.self) }
        var fraction = 0
        if scanner.skip(UInt8(ascii: ".")) {
            // Keep microseconds; round on the seventh digit if there is one.
            let (seven, count) = scanner.fraction(digits: 7)
            guard count > 0 else { throw PostgresError.cannotDecode(Date.self) }
            fraction = (seven + 5) / 10
        }
        var offsetSeconds = 0
        if scanner.skip(UInt8(ascii: "Z")) {
            offsetSeconds = 0
        } else if let sign = scanner.sign() {
            guard let hours = scanner.number(minDigits: 2, maxDigits: 2) else {
                throw PostgresError.cannotDecode(Date.self)
            }
            var total = hours * 3600
            if scanner.skip(UInt8(ascii: ":")) {
                guard let minutes = scanner.number(minDigits: 2, maxDigits: 2) else {
                    throw PostgresError.cannotDecode(Date.self)
                }
                total += minutes * 60
                if scanner.skip(UInt8(ascii: ":")) {
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
        let bytes: UnsafeBufferPointer<UInt8>
        var position = 0

        init(_ bytes: UnsafeBufferPointer<UInt8>) {
            self.bytes = bytes
        }

        var isAtEnd: Bool { position == bytes.count }

        mutating func skip(_ byte: UInt8) -> Bool {
            guard position < bytes.count, bytes[position] == byte else { return false }
            position += 1
            return true
        }

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
            if skip(UInt8(ascii: "+")) { return 1 }
            if skip(UInt8(ascii: "-")) { return -1 }
            return nil
        }

        private func digit(at index: Int) -> Int? {
            guard index < bytes.count else { return nil }
            let value = Int(bytes[index]) - 48
            return (0...9).contains(value) ? value : nil
        }

        mutating func number(minDigits: Int, maxDigits: Int) -> Int? {
            var value = 0
            var count = 0
            while let digit = digit(at: position + count) {
                count += 1
                guard count <= maxDigits else { return nil }
                value = value * 10 + digit
            }
            guard count >= minDigits else { return nil }
            position += count
            return value
        }

        /// Reads every digit; returns the first `digits` of them as a number, zero-padded on the right when
        /// fewer, and how many digits there were.
        mutating func fraction(digits wanted: Int) -> (value: Int, count: Int) {
            var value = 0
            var count = 0
            while let digit = digit(at: position) {
                if count < wanted { value = value * 10 + digit }
                count += 1
                position += 1
            }
            for _ in min(count, wanted)..<wanted { value *= 10 }
            return (value, count)
        }
    }
}
