/// Something an operator should know about the Graph API version an app calls: it is near or past its sunset,
/// Facebook answered with another version, or the table does not list it.
public struct GraphVersionWarning: Sendable, Hashable {
    /// The warning's code, as `GET /v1/app` shows it.
    public enum Code: String, Sendable, CaseIterable {
        /// The version's last day is within ``GraphVersionTable/sunsetWindow`` days, or past.
        case sunset = "graph_version_sunset"
        /// Facebook's latest answer named another version than the one asked for.
        case upgraded = "graph_version_upgraded"
        /// The version is newer than every row of the table (accepted: Meta may have released it since).
        case unlisted = "graph_version_unlisted"
    }

    /// Which warning.
    public let code: Code
    /// One line for people.
    public let message: String
    /// The version asked for.
    public let requested: GraphVersion
    /// `sunset`: the version's last day, when the table has it.
    public let availableUntil: CalendarDay?
    /// `upgraded`: the version that answered.
    public let served: GraphVersion?
}

extension GraphVersionTable {
    /// How many days before a version's last day the sunset warning starts.
    public static let sunsetWindow = 90

    /// The warnings for an app that asks for `requested` and whose latest Graph answer named `served` (nil when
    /// none is known), on `day`.
    public func warnings(requested: GraphVersion, served: GraphVersion?, on day: CalendarDay) -> [GraphVersionWarning] {
        var warnings: [GraphVersionWarning] = []
        func sunset(_ until: CalendarDay?, _ message: String) {
            warnings.append(.init(code: .sunset, message: message, requested: requested, availableUntil: until, served: nil))
        }
        switch standing(of: requested, on: day) {
        case .available(let until?) where day.days(until: until) <= Self.sunsetWindow:
            let left = day.days(until: until)
            sunset(until, "\(requested) is served until \(until) (\(left == 1 ? "1 day" : "\(left) days") left); move the app to a newer version")
        case .retired(let until):
            let by = servingVersion(for: requested, on: day).map { "; Facebook answers its calls with \($0)" } ?? ""
            sunset(until, "\(requested) was served until \(until)\(by); move the app to a newer version")
        case .olderThanTable:
            sunset(nil, "\(requested) is older than every version Meta still lists (the oldest is \(releases[releases.count - 1].version)): it is retired")
        case .newerThanTable, .unknown, .unreleased:
            warnings.append(
                .init(
                    code: .unlisted,
                    message: "\(requested) is not in the project's table of Meta's versions (newest \(releases[0].version)); it is used as given",
                    requested: requested, availableUntil: nil, served: nil))
        case .available:
            break
        }
        if let served, served != requested {
            warnings.append(
                .init(
                    code: .upgraded, message: "Facebook answered \(requested) calls as \(served)",
                    requested: requested, availableUntil: nil, served: served))
        }
        return warnings
    }

    /// What an operator's version (a setting or a command's option) comes to.
    public enum Check: Sendable, Equatable {
        /// Usable; the warnings (sunset, unlisted) are to be shown.
        case accepted(GraphVersion, warnings: [String])
        /// Not a version: one line saying why.
        case refused(String)
    }

    /// Checks a version an operator gives as `name` (`FBS_GRAPH_VERSION`, `--graph-version`) on `day`: a malformed
    /// one, or one between the table's rows that Graph never had, is refused with one line; a well-formed version
    /// newer than the table is accepted with a warning, as is one near or past its sunset.
    public func check(_ text: String, as name: String, on day: CalendarDay) -> Check {
        guard let version = GraphVersion(text) else {
            return .refused("\(name): \"\(text)\" is not a Graph API version; expected vMAJOR.MINOR such as \(Self.defaultVersion)")
        }
        if case .unknown = standing(of: version, on: day) {
            let range = "\(releases[releases.count - 1].version) to \(releases[0].version)"
            return .refused("\(name): \(version) is not a Graph API version (Meta's table lists \(range))")
        }
        return .accepted(version, warnings: warnings(requested: version, served: nil, on: day).map { "\(name): \($0.message)" })
    }
}
