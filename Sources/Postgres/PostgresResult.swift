internal import CLibPQ

/// Owns one `PGresult` and frees it with `PQclear` in `deinit`.
///
/// Ownership: the only owner of its `PGresult`; values are copied out into `PostgresRows` by `rows()`, so the
/// handle never outlives this object.
/// Thread safety: used by the thread that ran the statement, then dropped.
final class PostgresResult {
    /// The `PGresult*`; never NULL.
    let handle: OpaquePointer

    /// Takes ownership of `handle`.
    ///
    /// - Parameter handle: A result from `PQexec` or `PQexecParams`.
    init(_ handle: OpaquePointer) {
        self.handle = handle
    }

    deinit {
        PQclear(handle)
    }

    /// `PQresultStatus`.
    var status: ExecStatusType {
        PQresultStatus(handle)
    }

    /// One diagnostic field (`PG_DIAG_*`), if present.
    ///
    /// - Parameter field: The field code, such as `PG_DIAG_SQLSTATE`.
    /// - Returns: The text.
    func errorField(_ field: Int32) -> String? {
        PQresultErrorField(handle, field).map { String(cString: $0) }
    }

    /// The server's error as a `PostgresError`, with every value in `secrets` scrubbed from its text.
    ///
    /// - Parameters:
    ///   - code: The error code to use.
    ///   - secrets: Parameter values and passwords to remove from the text.
    /// - Returns: The error.
    func error(_ code: PostgresError.Code, scrubbing secrets: [String]) -> PostgresError {
        var parts: [String] = []
        if let primary = errorField(DiagnosticField.messagePrimary) {
            parts.append(primary)
        } else if let message = PQresultErrorMessage(handle).map({ String(cString: $0) }), !message.isEmpty {
            parts.append(message)
        }
        if let detail = errorField(DiagnosticField.messageDetail) {
            parts.append("DETAIL: " + detail)
        }
        if let hint = errorField(DiagnosticField.messageHint) {
            parts.append("HINT: " + hint)
        }
        return PostgresError(
            code,
            sqlState: errorField(DiagnosticField.sqlState),
            constraintName: errorField(DiagnosticField.constraintName),
            detail: PostgresError.scrub(parts.joined(separator: " "), removing: secrets)
        )
    }

    /// Copies the result's columns, values and affected-row count into Swift values.
    ///
    /// - Parameter cached: The column table of an earlier result of the same prepared statement, reused when
    ///   the column count matches; nil builds a new table.
    /// - Returns: The rows.
    /// - Throws: `PostgresError` with code `.decodingFailed` if libpq hands back a NULL value pointer.
    func rows(columns cached: PostgresColumnTable? = nil) throws -> PostgresRows {
        let rowCount = Int(PQntuples(handle))
        let columnCount = Int(PQnfields(handle))
        let table: PostgresColumnTable
        if let cached, cached.names.count == columnCount {
            table = cached
        } else {
            var columns: [String] = []
            columns.reserveCapacity(columnCount)
            for column in 0..<columnCount {
                columns.append(PQfname(handle, Int32(column)).map { String(cString: $0) } ?? "?column?")
            }
            table = PostgresColumnTable(columns)
        }
        let count = rowCount * columnCount
        var starts = [Int32](repeating: 0, count: count)
        var lengths = [Int32](repeating: -1, count: count)
        var total = 0
        for row in 0..<rowCount {
            for column in 0..<columnCount where PQgetisnull(handle, Int32(row), Int32(column)) == 0 {
                total += Int(PQgetlength(handle, Int32(row), Int32(column)))
            }
        }
        guard total < Int(Int32.max) else {
            throw PostgresError(.decodingFailed, detail: "result of \(total) bytes is too large")
        }
        var bytes = [UInt8]()
        bytes.reserveCapacity(total)
        for row in 0..<rowCount {
            for column in 0..<columnCount where PQgetisnull(handle, Int32(row), Int32(column)) == 0 {
                guard let text = PQgetvalue(handle, Int32(row), Int32(column)) else {
                    throw PostgresError(.decodingFailed, detail: "libpq returned no value for row \(row)")
                }
                // The length libpq knows saves a strlen; text output is UTF-8 (client_encoding).
                let length = Int(PQgetlength(handle, Int32(row), Int32(column)))
                let index = row * columnCount + column
                starts[index] = Int32(bytes.count)
                lengths[index] = Int32(length)
                text.withMemoryRebound(to: UInt8.self, capacity: length) {
                    bytes.append(contentsOf: UnsafeBufferPointer(start: $0, count: length))
                }
            }
        }
        let affected = PQcmdTuples(handle).map { Int(String(cString: $0)) ?? 0 } ?? 0
        let storage =
            columnCount == 0 && rowCount == 0
            ? PostgresRowStorage.empty : PostgresRowStorage(
                table: table, bytes: bytes, starts: starts, lengths: lengths, rowCount: rowCount)
        return PostgresRows(storage: storage, affectedRows: affected)
    }

    /// The command tag (`PQcmdStatus`), such as `COMMIT` or `ROLLBACK`.
    var commandStatus: String {
        PQcmdStatus(handle).map { String(cString: $0) } ?? ""
    }
}

/// libpq's `PG_DIAG_*` field codes. They are character-literal macros in `postgres_ext.h`, which Swift does
/// not import.
enum DiagnosticField {
    /// `PG_DIAG_SEVERITY_NONLOCALIZED`: `ERROR`, `FATAL`, `PANIC`, `WARNING`, `NOTICE`, …
    static let severityNonlocalized = Int32(UInt8(ascii: "V"))
    /// `PG_DIAG_SQLSTATE`.
    static let sqlState = Int32(UInt8(ascii: "C"))
    /// `PG_DIAG_MESSAGE_PRIMARY`.
    static let messagePrimary = Int32(UInt8(ascii: "M"))
    /// `PG_DIAG_MESSAGE_DETAIL`.
    static let messageDetail = Int32(UInt8(ascii: "D"))
    /// `PG_DIAG_MESSAGE_HINT`.
    static let messageHint = Int32(UInt8(ascii: "H"))
    /// `PG_DIAG_CONSTRAINT_NAME`.
    static let constraintName = Int32(UInt8(ascii: "n"))
}
