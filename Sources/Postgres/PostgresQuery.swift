/// A SQL statement with its parameters, built by string interpolation.
///
/// Every interpolated value becomes a numbered placeholder (`$1`, `$2`, …) in `sql` and its text encoding is
/// appended to `binds`; literal segments are kept verbatim. So
/// `let query: PostgresQuery = "SELECT * FROM t WHERE a = \(a) AND b = \(b)"` renders
/// `SELECT * FROM t WHERE a = $1 AND b = $2` with `binds == [a.postgresText, b.postgresText]`.
/// Values never become SQL text; only `init(unsafeSQL:)` accepts a runtime string as SQL.
public struct PostgresQuery: ExpressibleByStringInterpolation, Sendable {
    /// The SQL text with `$n` placeholders.
    public var sql: String
    /// The parameters in text format; `nil` is SQL `NULL`. `binds[0]` is `$1`.
    public var binds: [String?]

    /// Creates a query from raw SQL without parameters, for example a migration file.
    ///
    /// - Parameter unsafeSQL: SQL text that must not contain untrusted input.
    public init(unsafeSQL: String) {
        self.sql = unsafeSQL
        self.binds = []
    }

    /// Creates a query from a string literal that has no interpolations.
    ///
    /// - Parameter value: The SQL text, fixed at compile time.
    public init(stringLiteral value: String) {
        self.sql = value
        self.binds = []
    }

    /// Creates a query from an interpolated string literal.
    ///
    /// - Parameter stringInterpolation: The collected SQL and parameters.
    public init(stringInterpolation: StringInterpolation) {
        self.sql = stringInterpolation.sql
        self.binds = stringInterpolation.binds
    }

    /// Collects literal SQL segments and turns interpolated values into `$n` parameters.
    public struct StringInterpolation: StringInterpolationProtocol, Sendable {
        /// The SQL collected so far.
        var sql: String
        /// The parameters collected so far.
        var binds: [String?]

        /// Creates an empty interpolation.
        ///
        /// - Parameters:
        ///   - literalCapacity: The combined length of the literal segments.
        ///   - interpolationCount: The number of interpolated values.
        public init(literalCapacity: Int, interpolationCount: Int) {
            self.sql = ""
            self.sql.reserveCapacity(literalCapacity + interpolationCount * 3)
            self.binds = []
            self.binds.reserveCapacity(interpolationCount)
        }

        /// Appends a literal SQL segment verbatim.
        ///
        /// - Parameter literal: SQL text from the source code.
        public mutating func appendLiteral(_ literal: String) {
            sql += literal
        }

        /// Appends a parameter placeholder `$n` and records the value's text encoding (`nil` for SQL `NULL`).
        ///
        /// - Parameter value: Any encodable value, including an `Optional` of one.
        public mutating func appendInterpolation(_ value: some PostgresEncodable) {
            binds.append(value.postgresText)
            sql += "$\(binds.count)"
        }

        /// Appends a parameter placeholder `$n` for an optional value: its text, or SQL `NULL` for `nil`.
        ///
        /// - Parameter value: The value or `nil`.
        public mutating func appendInterpolation<Value: PostgresEncodable>(_ value: Value?) {
            binds.append(value?.postgresText)
            sql += "$\(binds.count)"
        }
    }
}
