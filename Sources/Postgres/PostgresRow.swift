/// One row of a `PostgresRows` result.
///
/// Decode columns by name or by position. Decoding SQL `NULL` into a non-optional type throws; ask for an
/// optional type (`as: String?.self`, or a `String?` result) to get `nil` instead.
public struct PostgresRow: Sendable {
    /// The result this row belongs to.
    let storage: PostgresRowStorage
    /// The row's position in the result.
    let index: Int

    /// The column names in result order.
    public var columns: [String] {
        storage.columns
    }

    /// Decodes the non-NULL value of the named column.
    ///
    /// - Parameters:
    ///   - column: The column name; with duplicate names the first column wins.
    ///   - type: The Swift type to decode.
    /// - Returns: The value.
    /// - Throws: `PostgresError` with code `.decodingFailed` if the column is missing, NULL or malformed.
    public func decode<T: PostgresDecodable>(_ column: String, as type: T.Type = T.self) throws -> T {
        guard let value = try decode(column, as: T?.self) else {
            throw PostgresError(.decodingFailed, detail: "column '\(column)' is NULL, expected \(T.self)")
        }
        return value
    }

    /// Decodes the named column, giving `nil` for SQL `NULL`.
    ///
    /// - Parameters:
    ///   - column: The column name; with duplicate names the first column wins.
    ///   - type: The optional Swift type to decode.
    /// - Returns: The value, or `nil` for `NULL`.
    /// - Throws: `PostgresError` with code `.decodingFailed` if the column is missing or malformed.
    public func decode<T: PostgresDecodable>(_ column: String, as type: T?.Type = T?.self) throws -> T? {
        guard let position = storage.columnIndex[column] else {
            throw PostgresError(.decodingFailed, detail: "no column named '\(column)'")
        }
        return try decodeValue(at: position, label: "'\(column)'", as: T.self)
    }

    /// Decodes the non-NULL value of the column at `column`.
    ///
    /// - Parameters:
    ///   - column: The zero-based column position.
    ///   - type: The Swift type to decode.
    /// - Returns: The value.
    /// - Throws: `PostgresError` with code `.decodingFailed` if the column is missing, NULL or malformed.
    public func decode<T: PostgresDecodable>(_ column: Int, as type: T.Type = T.self) throws -> T {
        guard let value = try decode(column, as: T?.self) else {
            throw PostgresError(.decodingFailed, detail: "column \(column) is NULL, expected \(T.self)")
        }
        return value
    }

    /// Decodes the column at `column`, giving `nil` for SQL `NULL`.
    ///
    /// - Parameters:
    ///   - column: The zero-based column position.
    ///   - type: The optional Swift type to decode.
    /// - Returns: The value, or `nil` for `NULL`.
    /// - Throws: `PostgresError` with code `.decodingFailed` if the column is missing or malformed.
    public func decode<T: PostgresDecodable>(_ column: Int, as type: T?.Type = T?.self) throws -> T? {
        guard storage.columns.indices.contains(column) else {
            throw PostgresError(.decodingFailed, detail: "no column at position \(column)")
        }
        return try decodeValue(at: column, label: "\(column)", as: T.self)
    }

    /// The position of the named column (the first one with duplicate names), or nil when there is none. Look
    /// it up once per result and decode by position to save a name lookup per value.
    public func position(of column: String) -> Int? {
        storage.columnIndex[column]
    }

    private func decodeValue<T: PostgresDecodable>(
        at position: Int, label: @autoclosure () -> String, as type: T.Type
    ) throws -> T? {
        do {
            return try storage.withValue(at: index * storage.columns.count + position) {
                try T(postgresBytes: PostgresBytes(buffer: $0))
            }
        } catch let error as PostgresError {
            // The conformer's message never contains the value; add which column it was.
            throw PostgresError(.decodingFailed, detail: "column \(label()): \(error.detail ?? "\(error)")")
        }
    }
}
