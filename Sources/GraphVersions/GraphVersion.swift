/// A Graph API version as it appears in a URL path: `v` and two numbers, `v25.0`.
///
/// Parsing is strict: `21`, `v21`, `V21.0`, `v21.0.1`, `latest` and numbers of more than four digits are refused,
/// so that a typo in a setting or a command is an error at once and never a silent call to another version.
public struct GraphVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The number before the dot.
    public let major: Int
    /// The number after the dot.
    public let minor: Int

    /// Reads `vMAJOR.MINOR`; nil for anything else.
    public init?(_ text: some StringProtocol) {
        let bytes = Array(text.utf8)
        guard bytes.first == UInt8(ascii: "v"), let dot = bytes.firstIndex(of: UInt8(ascii: ".")) else { return nil }
        guard let major = Self.number(bytes[1..<dot]), let minor = Self.number(bytes[(dot + 1)...]) else { return nil }
        self.major = major
        self.minor = minor
    }

    /// A version from its two numbers.
    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    /// `vMAJOR.MINOR`.
    public var description: String { "v\(major).\(minor)" }

    public static func < (lhs: GraphVersion, rhs: GraphVersion) -> Bool {
        (lhs.major, lhs.minor) < (rhs.major, rhs.minor)
    }

    /// One to four decimal digits.
    private static func number(_ digits: ArraySlice<UInt8>) -> Int? {
        guard (1...4).contains(digits.count), digits.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return digits.reduce(0) { $0 * 10 + Int($1 - 48) }
    }
}
