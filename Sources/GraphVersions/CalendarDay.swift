/// A day of the proleptic Gregorian calendar in UTC, as Meta's versions table dates its releases and sunsets.
public struct CalendarDay: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Days since 1970-01-01.
    public let daysSinceEpoch: Int

    /// The day with this number (0 is 1970-01-01).
    public init(daysSinceEpoch: Int) {
        self.daysSinceEpoch = daysSinceEpoch
    }

    /// The UTC day that contains this instant (Unix seconds).
    public init(unixSeconds: Double) {
        daysSinceEpoch = Int((unixSeconds / 86_400).rounded(.down))
    }

    /// Reads `YYYY-MM-DD`; nil for anything else, or a day that does not exist (`2027-02-30`).
    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            parts.allSatisfy({ $0.utf8.allSatisfy { (48...57).contains($0) } }),
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (1...12).contains(month), (1...Self.length(ofMonth: month, year: year)).contains(day)
        else { return nil }
        daysSinceEpoch = Self.days(year: year, month: month, day: day)
    }

    /// The day `count` days later (earlier when negative).
    public func adding(days count: Int) -> CalendarDay {
        CalendarDay(daysSinceEpoch: daysSinceEpoch + count)
    }

    /// Whole days from this day to `later` (negative when `later` is earlier).
    public func days(until later: CalendarDay) -> Int {
        later.daysSinceEpoch - daysSinceEpoch
    }

    /// Midnight UTC at the start of the day, in Unix seconds.
    public var unixSeconds: Double { Double(daysSinceEpoch) * 86_400 }

    /// `YYYY-MM-DD`.
    public var description: String {
        let (year, month, day) = Self.civil(fromDays: daysSinceEpoch)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let yearText = String(year)
        return String(repeating: "0", count: max(0, 4 - yearText.count)) + yearText + "-" + two(month) + "-" + two(day)
    }

    public static func < (lhs: CalendarDay, rhs: CalendarDay) -> Bool {
        lhs.daysSinceEpoch < rhs.daysSinceEpoch
    }

    private static func length(ofMonth month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a civil date (Howard Hinnant's `days_from_civil`, in eras of 400 years).
    private static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The civil date of a day number (the inverse of `days(year:month:day:)`).
    private static func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
