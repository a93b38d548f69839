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
///
/// The values are copied out of libpq into one byte buffer, back to back, with each value's start and length
/// (length -1 for SQL `NULL`): two allocations per result instead of one `String` per value, and decoders that
/// read numbers, booleans and timestamps straight from the bytes (docs/performance.md).
final class PostgresRowStorage: Sendable {
    /// The column table.
    let table: PostgresColumnTable
    /// Every non-NULL value's bytes, row-major.
    let bytes: [UInt8]
    /// Each value's start in ``bytes``, row-major.
    let starts: [Int32]
    /// Each value's length in bytes, or -1 for SQL `NULL`, row-major.
    let lengths: [Int32]
    /// The number of rows.
    let rowCount: Int

    /// The column names in result order.
    var columns: [String] { table.names }
    /// Column name → index of its first occurrence.
    var columnIndex: [String: Int] { table.index }

    /// Creates the storage from text values (tests).
    ///
    /// - Parameters:
    ///   - columns: The column names.
    ///   - values: `rowCount * columns.count` values, row-major; nil is SQL `NULL`.
    ///   - rowCount: The number of rows.
    convenience init(columns: [String], values: [String?], rowCount: Int) {
        var bytes: [UInt8] = []
        var starts: [Int32] = []
        var lengths: [Int32] = []
        for value in values {
            starts.append(Int32(bytes.count))
            if let value {
                bytes.append(contentsOf: value.utf8)
                lengths.append(Int32(value.utf8.count))
            } else {
                lengths.append(-1)
            }
        }
        self.init(
            table: PostgresColumnTable(columns), bytes: bytes, starts: starts, lengths: lengths, rowCount: rowCount)
    }

    init(table: PostgresColumnTable, bytes: [UInt8], starts: [Int32], lengths: [Int32], rowCount: Int) {
        self.table = table
        self.bytes = bytes
        self.starts = starts
        self.lengths = lengths
        self.rowCount = rowCount
    }

    /// Calls `body` with the bytes of value `index` (row-major), or returns nil for SQL `NULL`.
    func withValue<T>(at index: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> T) rethrows -> T? {
        let length = Int(lengths[index])
        guard length >= 0 else { return nil }
        let start = Int(starts[index])
        return try bytes.withUnsafeBufferPointer { buffer in
            try body(UnsafeBufferPointer(rebasing: buffer[start..<start + length]))
        }
    }

    /// A result without columns, for commands such as `BEGIN`.
    static let empty = PostgresRowStorage(table: .empty, bytes: [], starts: [], lengths: [], rowCount: 0)
}
