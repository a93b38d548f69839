/// Meta's table of Graph API versions: when each was released and the last day Facebook serves it as itself.
///
/// The rows are data: a new version, or a sunset Meta announces, is one edit of ``metaRows`` (docs/graph-versions.md
/// says how to check and ship it). The service's default version and its warnings, the `app` commands' checks and
/// the Graph emulator all read this one table.
///
/// Facebook's rules, which every answer here follows (docs/graph-versions.md, with the sources):
/// - a version is served as itself from its release through its "available until" day;
/// - a call to a retired version is "defaulted to the next oldest usable version": the oldest version still
///   served that day answers, and names itself in the `facebook-api-version` header.
public struct GraphVersionTable: Sendable {
    /// One row.
    public struct Release: Sendable, Hashable {
        /// The version.
        public let version: GraphVersion
        /// The day Meta released it.
        public let released: CalendarDay
        /// The last day Facebook serves it as itself; nil while Meta has not announced it.
        public let availableUntil: CalendarDay?

        /// Whether Facebook serves this version as itself on `day`.
        public func isServed(on day: CalendarDay) -> Bool {
            released <= day && availableUntil.map { day <= $0 } ?? true
        }
    }

    /// Where a version stands on a given day.
    public enum Standing: Sendable, Hashable {
        /// In the table and served as itself; `until` is its last day, nil while not announced.
        case available(until: CalendarDay?)
        /// In the table and past its last day (`until`): another version answers its calls.
        case retired(until: CalendarDay)
        /// In the table, but its release day has not come.
        case unreleased(on: CalendarDay)
        /// Newer than every row: perhaps released since the table was last edited.
        case newerThanTable
        /// Older than every row: retired before the oldest version the table lists.
        case olderThanTable
        /// Between the table's oldest and newest rows but not one of them (`v24.1`): no such version.
        case unknown
    }

    /// The rows, newest first.
    public let releases: [Release]

    /// Where the rows come from, for docs and `--help`.
    public static let source =
        "Meta for Developers, Graph API, Changelog, Versions (developers.facebook.com/docs/graph-api/changelog/versions)"

    /// Meta's table as of 2026-12-07, newest first: version, release day, last day served (`-`: not announced).
    /// v25.0's last day is the one Meta's localized versions pages give; the English page still says TBD (a
    /// version is kept two years after the next one ships, and v26.0 shipped on 2026-07-29, which agrees).
    public static let metaRows = """
        v26.0  2026-07-29  -
        v25.0  2026-02-18  2028-07-29
        v24.0  2025-10-08  2028-02-18
        v23.0  2025-05-29  2027-10-08
        v22.0  2025-01-21  2027-05-20
        v21.0  2024-10-02  2027-01-21
        v20.0  2024-05-21  2026-09-24
        v19.0  2024-01-23  2026-05-21
        v18.0  2023-09-12  2026-01-26
        """

    /// Meta's table (``metaRows``).
    public static let meta: GraphVersionTable = {
        do {
            return try GraphVersionTable(parsing: metaRows)
        } catch {
            preconditionFailure("GraphVersionTable.metaRows: \(error)")
        }
    }()

    /// The version the service uses when neither `FBS_GRAPH_VERSION` nor the app names one: the newest with more
    /// than a year left on Meta's table (v25.0 as of 2026-12-07, served until 2028-07-29).
    public static let defaultVersion = GraphVersion(major: 25, minor: 0)

    /// A table from rows of `version released available-until` (`-` for not announced), newest first.
    /// - Throws: ``TableError`` naming the first bad line: a malformed field, rows out of order or repeated, a last
    ///   day before the release.
    public init(parsing text: String) throws(TableError) {
        var releases: [Release] = []
        for (index, line) in text.split(separator: "\n").enumerated() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count == 3, let version = GraphVersion(fields[0]), let released = CalendarDay(fields[1]) else {
                throw TableError(line: index + 1, problem: "expected `vMAJOR.MINOR YYYY-MM-DD YYYY-MM-DD|-`")
            }
            var until: CalendarDay?
            if fields[2] != "-" {
                guard let day = CalendarDay(fields[2]), released <= day else {
                    throw TableError(line: index + 1, problem: "the last day must be a date on or after the release")
                }
                until = day
            }
            if let previous = releases.last, !(version < previous.version && released <= previous.released) {
                throw TableError(line: index + 1, problem: "rows must be newest first, each version once")
            }
            releases.append(Release(version: version, released: released, availableUntil: until))
        }
        guard !releases.isEmpty else { throw TableError(line: 0, problem: "no rows") }
        self.releases = releases
    }

    /// The row of `version`, if the table has one.
    public func release(of version: GraphVersion) -> Release? {
        releases.first { $0.version == version }
    }

    /// Where `version` stands on `day`.
    public func standing(of version: GraphVersion, on day: CalendarDay) -> Standing {
        guard let release = release(of: version) else {
            if version > releases[0].version { return .newerThanTable }
            if version < releases[releases.count - 1].version { return .olderThanTable }
            return .unknown
        }
        if day < release.released { return .unreleased(on: release.released) }
        if let until = release.availableUntil, until < day { return .retired(until: until) }
        return .available(until: release.availableUntil)
    }

    /// The version Facebook answers a call to `version` with on `day`: itself while served; for a retired version
    /// (or one older than the table), the oldest version served that day; nil for a version the table does not
    /// know to be served (newer than the table, unreleased, or no such version).
    public func servingVersion(for version: GraphVersion, on day: CalendarDay) -> GraphVersion? {
        switch standing(of: version, on: day) {
        case .available: version
        case .retired, .olderThanTable: releases.last { $0.isServed(on: day) }?.version
        case .newerThanTable, .unreleased, .unknown: nil
        }
    }

    /// A row or the whole table that cannot be read.
    public struct TableError: Error, CustomStringConvertible, Sendable {
        /// The 1-based line.
        public let line: Int
        /// What is wrong.
        public let problem: String

        /// `line N: problem`.
        public var description: String { "line \(line): \(problem)" }
    }
}
