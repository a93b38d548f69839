import FBSessionsCore
import Foundation
import Postgres

extension PostgresSessionStore: SweepStore {
    public func claimDue(limit: Int, maxAge: Double, expiryMargin: Double, refreshAfter: Double, lease: Double)
        async throws -> [DueSession]
    {
        let claimed: [(Session, Keyring.Sealed)] = try await databaseTransaction { connection in
            let rows = try connection.query(
                """
                WITH due AS (
                    SELECT id FROM sessions
                    WHERE state <> 'closed' AND login_kind = 'standard'
                      AND (validating_until IS NULL OR validating_until < now())
                      AND (validated_at IS NULL OR validated_at < now() - make_interval(secs => \(maxAge))
                           OR token_expires_at < now() + make_interval(secs => \(expiryMargin))
                           OR token_refreshed_at < now() - make_interval(secs => \(refreshAfter)))
                    ORDER BY validated_at NULLS FIRST
                    LIMIT \(limit)
                    FOR UPDATE SKIP LOCKED
                )
                UPDATE sessions s SET validating_until = now() + make_interval(secs => \(lease))
                FROM due WHERE s.id = due.id
                RETURNING s.id, s.app_id, s.token_key_id, s.token_box
                """)
            return try rows.compactMap { row -> (Session, Keyring.Sealed)? in
                guard let keyID = try row.decode("token_key_id", as: String?.self),
                    let session = try Self.read(try row.decode("id"), appID: try row.decode("app_id"), on: connection)
                else { return nil }
                return (session, Keyring.Sealed(keyID: keyID, box: try row.decode("token_box", as: [UInt8].self)))
            }
        }
        return try claimed.map { DueSession(session: $0.0, token: try open($0.1, sessionID: $0.0.id)) }
    }

    public func claimRevocations(limit: Int, lease: Double) async throws -> [PendingRevocation] {
        let claimed: [(String, String, Keyring.Sealed, Int, String)] = try await databaseTransaction { connection in
            try connection.query(
                """
                WITH due AS (
                    SELECT session_id FROM pending_revocations WHERE next_attempt <= now()
                    ORDER BY next_attempt LIMIT \(limit) FOR UPDATE SKIP LOCKED
                )
                UPDATE pending_revocations p SET next_attempt = now() + make_interval(secs => \(lease))
                FROM due WHERE p.session_id = due.session_id
                RETURNING p.session_id, p.app_id, p.token_key_id, p.token_box, p.attempts, p.login_kind
                """
            ).map {
                (try $0.decode("session_id"), try $0.decode("app_id"),
                 Keyring.Sealed(keyID: try $0.decode("token_key_id"), box: try $0.decode("token_box")),
                 try $0.decode("attempts"), try $0.decode("login_kind"))
            }
        }
        return try claimed.map {
            PendingRevocation(
                sessionID: $0.0, appID: $0.1, token: try open($0.2, sessionID: $0.0), attempts: $0.3,
                loginKind: LoginKind(rawValue: $0.4) ?? .standard)
        }
    }

    public func pruneAudit(retentionDays: Int) async throws -> Int {
        try await databaseRun { connection in try PostgresAuditLog.prune(retentionDays: retentionDays, on: connection) }
    }

    public func pruneLoginNonces(limit: Int) async throws -> Int {
        try await databaseRun { connection in try Self.pruneNonces(limit: limit, on: connection) }
    }

    /// Deletes up to `limit` nonces that expired more than an hour ago (kept that long so that a late reuse is
    /// answered `nonce_used` or `nonce_expired`).
    static func pruneNonces(limit: Int, on connection: PostgresConnection) throws -> Int {
        try connection.execute(
            """
            DELETE FROM login_nonces WHERE nonce_hash IN (
                SELECT nonce_hash FROM login_nonces WHERE expires_at < now() - interval '1 hour' LIMIT \(limit))
            """)
    }

    public func revocationFailed(sessionID: String, retryAfter: Double) async throws {
        try await databaseRun { connection in
            _ = try connection.execute(
                """
                UPDATE pending_revocations SET attempts = attempts + 1,
                    next_attempt = now() + make_interval(secs => \(retryAfter))
                WHERE session_id = \(sessionID)
                """)
        }
    }

    public func app(id: String) async throws -> App? {
        try await databaseRun { connection in
            try connection.query("SELECT \(unsafeSQL: AppRow.columns) FROM apps a WHERE a.id = \(id)").first.map(AppRow.app)
        }
    }
}
