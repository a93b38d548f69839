internal import CLibPQ

extension PostgresConnection {
    /// Runs a parameterized statement: through the statement cache while the policy prepares, else as the
    /// unnamed statement.
    ///
    /// When the server refuses a prepared statement before running it (``PostgresError/statementDidNotRun``:
    /// 26000, 42P05, 08P01, or 0A000 for a cached plan) outside a transaction block, nothing ran and nothing was
    /// aborted, so it is sent once more at once, as the unnamed statement, which needs nothing from the server
    /// session. Inside a transaction block the refusal aborted the transaction; it is thrown, and
    /// ``PostgresPool/transaction(_:)`` may run the transaction again on a fresh connection.
    func runStatement(_ sql: String, binds: [String?]) throws -> PostgresRows {
        let secrets = binds.compactMap { $0 } + (password.map { [$0] } ?? [])
        guard policy.prepares else {
            return try run(.unnamed(sql, binds), secrets: secrets).rows()
        }
        do {
            return try runPrepared(sql, binds: binds, secrets: secrets)
        } catch let error as PostgresError where error.statementDidNotRun && isIdle {
            return try run(.unnamed(sql, binds), secrets: secrets).rows()
        }
    }

    /// Whether the connection is open and outside a transaction block.
    var isIdle: Bool {
        guard let handle else { return false }
        return PQtransactionStatus(handle) == PQTRANS_IDLE
    }

    /// Runs a parameterized statement through the statement cache: prepares it on first use on this connection,
    /// then executes the prepared statement. Falls back to the unnamed statement when the cache is full.
    private func runPrepared(_ sql: String, binds: [String?], secrets: [String]) throws -> PostgresRows {
        if let entry = statements.entry(for: sql) {
            let result: PostgresResult
            do {
                result = try run(.prepared(entry.name, binds), secrets: secrets)
            } catch var error as PostgresError where error.sqlState == "26000" || error.sqlState == "0A000" {
                // 26000: the server session no longer has the statement; 0A000: a table changed under a cached
                // plan so that its result type changed. Either way it did not run. Forget it; the next call
                // prepares it again.
                statements.remove(sql)
                if error.sqlState == "26000", statements.prepared(entry.name) {
                    policy.noteTransactionPooler("a statement this connection prepared was gone (SQLSTATE 26000)")
                } else if error.sqlState == "0A000", isIdle {
                    if (try? run(.simple("DEALLOCATE \(entry.name)"), secrets: [])) != nil {
                        statements.deallocated(entry.name)
                    }
                }
                error.statementDidNotRun = true
                throw error
            }
            let rows = try result.rows(columns: entry.columns)
            if entry.columns == nil { entry.columns = rows.storage.table }
            return rows
        }
        guard let name = statements.reserve(sql) else {
            return try run(.unnamed(sql, binds), secrets: secrets).rows()
        }
        var preparedHere = true
        do {
            try run(.prepare(name, sql, binds.count), secrets: secrets)
        } catch let error as PostgresError where error.sqlState == "42P05" {
            // The name comes from this very text, so the server session already holds this statement.
            if !statements.prepared(name) {
                policy.noteTransactionPooler("a statement this connection never prepared existed (SQLSTATE 42P05)")
            }
            guard isIdle else { throw error }  // In a transaction block the failed Parse aborted the transaction.
            preparedHere = false
        }
        let entry = statements.insert(sql, name: name, preparedHere: preparedHere)
        let rows = try run(.prepared(name, binds), secrets: secrets, counted: false).rows()
        entry.columns = rows.storage.table
        return rows
    }
}
