/// The rows of one statement's result, copied out of libpq, plus its command facts.
///
/// Values are held as PostgreSQL text; `PostgresRow.decode(_:as:)` turns them into Swift values. The column
/// name lookup table is built once per result and shared by all its rows.
public struct PostgresRows: Sendable, RandomAccessCollection {
    /// The shared column table and values.
    let storage: PostgresRowStorage
    /// The number of rows the command affected (`PQcmdTuples`): rows inserted, updated, deleted or selected;
    /// 0 for commands that do not report a count.
    public let affectedRows: Int

    /// The column names in result order.
    public var columns: [String] {
        storage.columns
    }

    /// The first row's index, always 0.
    public var startIndex: Int {
        0
    }

    /// One past the last row's index: the number of rows.
    public var endIndex: Int {
        storage.rowCount
    }

    /// The row at `position`.
    ///
    /// - Parameter position: A valid index, `0..<count`.
    public subscript(position: Int) -> PostgresRow {
        precondition(indices.contains(position), "PostgresRows index \(position) out of range 0..<\(count)")
        return PostgresRow(storage: storage, index: position)
    }
}

/// A result's column names and the name → position table, built once per prepared statement and shared by
/// all its results.
final class PostgresColumnTable: Sendable {
    /// The column names in result order.
    let names: [String]
    /// Column name → index of its first occurrence.
    let index: [String: Int]

    init(_ names: [String]) {
        var index: [String: Int] = [:]
        for (position, name) in names.enumerated() where index[name] == nil {
            index[name] = position
        }
        self.names = names
        self.index = index
    }

    static let empty = PostgresColumnTable([])
}

/// The immutable contents of one result, shared by `PostgresRows` and each of its `PostgresRow`s.
final class PostgresRowStorage: Sendable {
    /// The column table.
    let table: PostgresColumnTable
    /// The values, row-major; `nil` is SQL `NULL`.
    let values: [String?]
    /// The number of rows.
    let rowCount: Int

    /// The column names in result order.
    var columns: [String] { table.names }
    /// Column name → index of its first occurrence.
    var columnIndex: [String: Int] { table.index }

    /// Creates the storage.
    ///
    /// - Parameters:
    ///   - columns: The column names.
    ///   - values: `rowCount * columns.count` values, row-major.
    ///   - rowCount: The number of rows.
    convenience init(columns: [String], values: [String?], rowCount: Int) {
        self.init(table: PostgresColumnTable(columns), values: values, rowCount: rowCount)
    }

    init(table: PostgresColumnTable, values: [String?], rowCount: Int) {
        self.table = table
        self.values = values
        self.rowCount = rowCount
    }

    /// A result without columns, for commands such as `BEGIN`.
    static let empty = PostgresRowStorage(table: .empty, values: [], rowCount: 0)
}
