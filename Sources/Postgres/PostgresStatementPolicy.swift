import Support

/// The prepared-statement choice shared by the connections of one pool, and what they found out about the server
/// side: whether a pooler in transaction mode shares server sessions between clients.
///
/// Detection is passive and costs nothing: names come from the SQL text (``PostgresStatementName``), and this
/// client never drops a statement it still lists, so on a session of its own a connection can only see its own
/// statements. Two answers are therefore impossible without a pooler that moves the client between server
/// sessions: "does not exist" (26000) for a statement this connection prepared, and "already exists" (42P05) for
/// a name it never prepared. Either one, seen once on any connection of the pool, switches an ``automatic`` pool
/// to unnamed statements and to relying on no session state; both statements provably did not run, so nothing is
/// lost (``PostgresPool`` retries them). An explicit ``PostgresPreparedStatements/always`` or `never` is never
/// changed.
///
/// Thread safety: the flag is guarded by a lock; the callback runs once, on the thread that saw the evidence.
final class PostgresStatementPolicy: Sendable {
    /// The configured choice.
    let mode: PostgresPreparedStatements
    private let detected = Locked(false)
    private let onDetected: (@Sendable (String) -> Void)?

    /// Creates a policy.
    ///
    /// - Parameters:
    ///   - mode: The configured choice.
    ///   - onDetected: Called once with the evidence when an ``PostgresPreparedStatements/automatic`` policy first
    ///     sees a transaction-mode pooler.
    init(mode: PostgresPreparedStatements, onDetected: (@Sendable (String) -> Void)? = nil) {
        self.mode = mode
        self.onDetected = onDetected
    }

    /// Whether statements are prepared by name now.
    var prepares: Bool {
        switch mode {
        case .always: true
        case .never: false
        case .automatic: !detected.withLock { $0 }
        }
    }

    /// Whether a pooler in transaction mode was seen (always false for explicit modes, which never look).
    var detectedTransactionPooler: Bool {
        detected.withLock { $0 }
    }

    /// Records evidence of a transaction-mode pooler; an ``PostgresPreparedStatements/automatic`` policy stops
    /// preparing from now on.
    ///
    /// - Parameter evidence: What was seen, for the log (no SQL, no values).
    func noteTransactionPooler(_ evidence: String) {
        guard mode == .automatic else { return }
        let isFirst = detected.withLock { detected in
            defer { detected = true }
            return !detected
        }
        if isFirst {
            onDetected?(evidence)
        }
    }
}
