import GraphVersions
import XCTest

final class GraphVersionTableTests: XCTestCase {
    private let table = GraphVersionTable.meta

    private func day(_ text: String) -> CalendarDay {
        guard let day = CalendarDay(text) else { preconditionFailure("bad day \(text)") }
        return day
    }

    func testVersionsParseStrictly() {
        XCTAssertEqual(GraphVersion("v25.0"), GraphVersion(major: 25, minor: 0))
        XCTAssertEqual(GraphVersion("v2.12")?.description, "v2.12")
        for bad in ["21", "v21", "latest", "V21.0", "v21.0.1", "v.0", "v21.", "v21.0 ", " v21.0", "v+1.0", "v12345.0", ""] {
            XCTAssertNil(GraphVersion(bad), bad)
        }
        XCTAssertLessThan(GraphVersion(major: 9, minor: 0), GraphVersion(major: 10, minor: 0))
    }

    func testCalendarDaysRoundTripAndRefuseImpossibleDates() {
        XCTAssertEqual(day("1970-01-01").daysSinceEpoch, 0)
        XCTAssertEqual(day("2027-01-21").description, "2027-01-21")
        XCTAssertEqual(day("2024-02-29").adding(days: 1).description, "2024-03-01")
        XCTAssertEqual(day("2026-12-07").days(until: day("2027-01-21")), 45)
        XCTAssertEqual(CalendarDay(unixSeconds: 1_800_000_000).description, "2027-01-15")
        XCTAssertEqual(CalendarDay(unixSeconds: -1).description, "1969-12-31")
        for bad in ["2027-02-29", "2027-13-01", "2027-1-01", "27-01-01", "2027-01-32", "2027/01/01", "2100-02-29"] {
            XCTAssertNil(CalendarDay(bad), bad)
        }
        XCTAssertNotNil(CalendarDay("2000-02-29"))
    }

    func testMetaTableReadsAndTheDefaultHasMoreThanAYearLeft() throws {
        XCTAssertEqual(table.releases.first?.version, GraphVersion(major: 26, minor: 0))
        XCTAssertEqual(table.release(of: GraphVersion(major: 21, minor: 0))?.availableUntil, day("2027-01-21"))
        let release = try XCTUnwrap(table.release(of: GraphVersionTable.defaultVersion))
        let until = try XCTUnwrap(release.availableUntil)
        XCTAssertGreaterThan(day("2026-12-07").days(until: until), 365)
    }

    func testARetiredVersionIsServedByTheOldestVersionStillServed() {
        let v21 = GraphVersion(major: 21, minor: 0)
        XCTAssertEqual(table.servingVersion(for: v21, on: day("2027-01-21")), v21, "the last day is still its own")
        XCTAssertEqual(table.servingVersion(for: v21, on: day("2027-01-22")), GraphVersion(major: 22, minor: 0))
        XCTAssertEqual(table.standing(of: v21, on: day("2027-01-22")), .retired(until: day("2027-01-21")))
        XCTAssertEqual(
            table.servingVersion(for: GraphVersion(major: 18, minor: 0), on: day("2026-12-07")),
            GraphVersion(major: 21, minor: 0))
        XCTAssertEqual(
            table.servingVersion(for: GraphVersion(major: 12, minor: 0), on: day("2026-12-07")),
            GraphVersion(major: 21, minor: 0), "older than the table: the oldest served")
        XCTAssertNil(table.servingVersion(for: GraphVersion(major: 27, minor: 0), on: day("2026-12-07")))
        XCTAssertNil(table.servingVersion(for: GraphVersion(major: 24, minor: 1), on: day("2026-12-07")))
        XCTAssertNil(table.servingVersion(for: GraphVersion(major: 26, minor: 0), on: day("2026-07-28")), "unreleased")
    }

    func testWarningsSayWhatAnOperatorMustKnow() {
        let v21 = GraphVersion(major: 21, minor: 0)
        let v25 = GraphVersion(major: 25, minor: 0)
        XCTAssertEqual(table.warnings(requested: v25, served: v25, on: day("2026-12-07")), [])
        XCTAssertEqual(table.warnings(requested: v25, served: nil, on: day("2028-04-29")), [], "91 days left")
        XCTAssertEqual(table.warnings(requested: v25, served: nil, on: day("2028-04-30")).map(\.code), [.sunset], "90 days left")

        let near = table.warnings(requested: v21, served: v21, on: day("2026-12-07"))
        XCTAssertEqual(near.map(\.code), [.sunset])
        XCTAssertEqual(near.first?.availableUntil, day("2027-01-21"))
        XCTAssertEqual(near.first?.message, "v21.0 is served until 2027-01-21 (45 days left); move the app to a newer version")

        let past = table.warnings(requested: v21, served: GraphVersion(major: 22, minor: 0), on: day("2027-01-22"))
        XCTAssertEqual(past.map(\.code), [.sunset, .upgraded])
        XCTAssertEqual(past.last?.served, GraphVersion(major: 22, minor: 0))
        XCTAssertTrue(past.first?.message.contains("Facebook answers its calls with v22.0") ?? false)

        let newer = table.warnings(requested: GraphVersion(major: 27, minor: 0), served: nil, on: day("2026-12-07"))
        XCTAssertEqual(newer.map(\.code), [.unlisted])
    }

    func testOperatorVersionsAreCheckedWithOneClearLine() {
        let today = day("2026-12-07")
        for bad in ["21", "v21", "latest"] {
            guard case .refused(let line) = table.check(bad, as: "FBS_GRAPH_VERSION", on: today) else {
                return XCTFail("\(bad) was accepted")
            }
            XCTAssertTrue(line.hasPrefix("FBS_GRAPH_VERSION: \"\(bad)\" is not a Graph API version"), line)
            XCTAssertFalse(line.contains("\n"))
        }
        guard case .refused(let between) = table.check("v24.1", as: "--graph-version", on: today) else {
            return XCTFail("v24.1 was accepted")
        }
        XCTAssertEqual(between, "--graph-version: v24.1 is not a Graph API version (Meta's table lists v18.0 to v26.0)")
        XCTAssertEqual(table.check("v25.0", as: "x", on: today), .accepted(GraphVersion(major: 25, minor: 0), warnings: []))
        guard case .accepted(_, let warnings) = table.check("v27.0", as: "x", on: today) else {
            return XCTFail("a version newer than the table was refused")
        }
        XCTAssertEqual(warnings.count, 1)
        XCTAssertTrue(warnings[0].hasPrefix("x: v27.0 is not in the project's table"))
    }

    func testTheTableRefusesBadRows() {
        XCTAssertThrowsError(try GraphVersionTable(parsing: "v25.0 2026-02-18 2028-07-29\nv26.0 2026-07-29 -"))
        XCTAssertThrowsError(try GraphVersionTable(parsing: "v25.0 2026-02-18 2025-07-29"))
        XCTAssertThrowsError(try GraphVersionTable(parsing: "v25 2026-02-18 -"))
        XCTAssertThrowsError(try GraphVersionTable(parsing: ""))
        XCTAssertNoThrow(try GraphVersionTable(parsing: GraphVersionTable.metaRows))
    }
}
