/// The statements one connection has prepared, keyed by SQL text.
///
/// Every parameterized statement (`query(_:)`, `execute(_:)`) is prepared once per connection with `PQprepare`
/// and then run with `PQexecPrepared`, so the server parses and plans it once instead of on every call (the
/// status path spent about half of PostgreSQL's time in parse and plan; docs/performance.md). The cache lives
/// and dies with its `PostgresConnection`: a reconnect makes a new connection with an empty cache, so every
/// statement is prepared again on the new server session.
///
/// Names come from the SQL text (``PostgresStatementName``), never from a counter, so one name means one text in
/// every process: behind a pooler that hands one client's statements to several server sessions, a name can
/// fail to exist (SQLSTATE 26000) or exist already (42P05), but never stand for another statement. The cache
/// remembers which names this connection prepared itself, so that a 42P05 for a name it never prepared, or a
/// 26000 for one it did and never dropped, can be told apart as a sign of such a pooler (docs/scale-out.md).
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
        /// The server-side name, from ``PostgresStatementName``.
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
    /// The text each name of this connection stands for: a second text with the same name (a hash collision) is
    /// never prepared under it.
    private var texts: [String: String] = [:]
    /// Names this connection prepared itself (kept after ``remove(_:)``, since the server may still hold them).
    private var preparedHere: Set<String> = []

    /// The entry for `sql`, if prepared.
    func entry(for sql: String) -> Entry? {
        entries[sql]
    }

    /// The name for a new statement, or nil when the cache is full or the name already stands for another text.
    mutating func reserve(_ sql: String) -> String? {
        guard entries.count < Self.capacity else { return nil }
        let name = PostgresStatementName.of(sql)
        if let text = texts[name], text != sql { return nil }
        return name
    }

    /// Records a statement the server holds under `name` (prepared now, or found already there).
    mutating func insert(_ sql: String, name: String, preparedHere isOwn: Bool) -> Entry {
        let entry = Entry(name: name)
        entries[sql] = entry
        texts[name] = sql
        if isOwn { preparedHere.insert(name) }
        return entry
    }

    /// Whether this connection itself prepared a statement under `name`.
    func prepared(_ name: String) -> Bool {
        preparedHere.contains(name)
    }

    /// Forgets a statement (the server lost it or refused to reuse it).
    mutating func remove(_ sql: String) {
        entries[sql] = nil
    }

    /// Forgets that this connection prepared `name` (after a `DEALLOCATE` it sent itself).
    mutating func deallocated(_ name: String) {
        preparedHere.remove(name)
    }

    /// The number of prepared statements.
    var count: Int { entries.count }
}
