/// Reads settings from an environment dictionary and collects every problem, so that a service can report all
/// invalid settings at once instead of one per start.
public struct EnvironmentReader {
    /// The variables read.
    public let environment: [String: String]
    /// Every problem found so far, one line each, naming the variable.
    public private(set) var problems: [String] = []

    /// Creates a reader over `environment`.
    public init(_ environment: [String: String]) {
        self.environment = environment
    }

    /// A string, or `fallback` when unset or empty.
    public func string(_ name: String, default fallback: String) -> String {
        guard let value = environment[name], !value.isEmpty else { return fallback }
        return value
    }

    /// A string, or nil when unset or empty.
    public func optionalString(_ name: String) -> String? {
        guard let value = environment[name], !value.isEmpty else { return nil }
        return value
    }

    /// An integer within `range`, or `fallback` when unset.
    public mutating func integer(_ name: String, default fallback: Int, in range: ClosedRange<Int>) -> Int {
        guard let text = optionalString(name) else { return fallback }
        guard let value = Int(text), range.contains(value) else {
            problems.append("\(name): expected a whole number in \(range.lowerBound)...\(range.upperBound)")
            return fallback
        }
        return value
    }

    /// A number of seconds (fractions allowed) within `range`, or `fallback` when unset.
    public mutating func seconds(_ name: String, default fallback: Double, in range: ClosedRange<Double>) -> Double {
        guard let text = optionalString(name) else { return fallback }
        guard let value = Double(text), value.isFinite, range.contains(value) else {
            problems.append("\(name): expected seconds in \(range.lowerBound)...\(range.upperBound)")
            return fallback
        }
        return value
    }

    /// `true`/`false` (also `1`/`0`, `yes`/`no`), or `fallback` when unset.
    public mutating func bool(_ name: String, default fallback: Bool) -> Bool {
        guard let text = optionalString(name) else { return fallback }
        switch text.lowercased() {
        case "true", "1", "yes", "on": return true
        case "false", "0", "no", "off": return false
        default:
            problems.append("\(name): expected true or false")
            return fallback
        }
    }

    /// Records a problem found by the caller's own check.
    public mutating func problem(_ line: String) {
        problems.append(line)
    }
}
