/// The statements one connection has prepared, keyed by SQL text.
///
/// Every parameterized statement (`query(_:)`, `execute(_:)`) is prepared once per connection with `PQprepare`
/// and then run with `PQexecPrepared`, so the server parses and plans it once instead of on every call (the
/// status path spent about half of PostgreSQL's time in parse and plan; docs/performance.md). The cache lives
/// and dies with its `PostgresConnection`: a reconnect makes a new connection with an empty cache, so every
/// statement is prepared again on the new server session.
///
/// The SQL text of a `PostgresQuery` is fixed at compile time (values become `$n`), so the set of statements is
/// small; the cache is still bounded, and statements past the bound run unprepared (`PQexecParams`).
///
/// Each entry also remembers the result's column table, built on first use: a prepared statement's result
/// shape cannot change (the server refuses with SQLSTATE 0A000 instead), so later results reuse it.
///
/// Thread safety: none; owned by one connection, used by one thread at a time.
struct PostgresStatementCache {
    /// One prepared statement.
    final class Entry {
        /// The server-side name, `fbs_<n>`.
        let name: String
        /// The result's columns, once seen.
        var columns: PostgresColumnTable?

        init(name: String) {
            self.name = name
        }
    }

    /// Most statements kept per connection.
    static let capacity = 256

    private var entries: [String: Entry] = [:]
    private var lastNumber = 0

    /// The entry for `sql`, if prepared.
    func entry(for sql: String) -> Entry? {
        entries[sql]
    }

    /// A name for a new statement, or nil when the cache is full.
    mutating func reserve() -> String? {
        guard entries.count < Self.capacity else { return nil }
        lastNumber += 1
        return "fbs_\(lastNumber)"
    }

    /// Records a statement the server accepted.
    mutating func insert(_ sql: String, name: String) -> Entry {
        let entry = Entry(name: name)
        entries[sql] = entry
        return entry
    }

    /// Forgets a statement (the server lost it or refused to reuse it).
    mutating func remove(_ sql: String) {
        entries[sql] = nil
    }

    /// The number of prepared statements.
    var count: Int { entries.count }
}
