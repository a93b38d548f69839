import Postgres

extension PostgresQuery.StringInterpolation {
    /// Splices fixed SQL text written in this module (column lists), never a value. Every use is reviewed:
    /// `grep -n unsafeSQL Sources`.
    mutating func appendInterpolation(unsafeSQL fragment: StaticString) {
        appendLiteral(fragment.description)
    }
}
