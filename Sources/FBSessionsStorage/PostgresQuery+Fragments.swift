import Postgres

extension PostgresQuery.StringInterpolation {
    /// Splices fixed SQL text written in this module (column lists), never a value. Every use is reviewed:
    /// `grep -n unsafeSQL Sources`.
    mutating func appendInterpolation(unsafeSQL fragment: StaticString) {
        appendLiteral(fragment.description)
    }

    /// Splices SQL text this module assembled from its own fixed pieces (``SQLFragment``), never a value.
    mutating func appendInterpolation(unsafeSQL fragment: SQLFragment) {
        appendLiteral(fragment.text)
    }
}

/// SQL text assembled once, at startup, from fixed pieces written in this module or in the model's declarations
/// (``SessionRow/columns`` from its column enum and ``Profile/Field``'s names), never from a value.
struct SQLFragment: Sendable {
    /// The text.
    let text: String

    init(_ text: String) {
        self.text = text
    }
}
