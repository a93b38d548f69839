import FBSessionsCore
import Foundation
import Postgres

/// Using a Limited Login nonce inside a login's transaction (``PostgresSessionStore/storeLogin(_:)``).
extension PostgresSessionStore {
    /// Marks the nonce used when it is this app's and this owner's, unused and unexpired: one conditional `UPDATE`,
    /// so of two transactions racing with one nonce the second waits for the first's row lock, then finds it used
    /// (or, when the first rolled back, uses it itself). Otherwise says why not, changing nothing.
    /// - Returns: the slot the nonce was issued for, if any.
    /// - Throws: ``LoginNonceError``.
    static func useNonce(_ use: NonceUse, appID: String, on connection: PostgresConnection) throws -> Int? {
        let used = try connection.query(
            """
            UPDATE login_nonces SET used_at = now()
            WHERE nonce_hash = \(use.hash) AND app_id = \(appID) AND owner = \(use.owner)
              AND used_at IS NULL AND expires_at > now()
            RETURNING slot
            """)
        if let row = used.first { return try row.decode("slot", as: Int?.self) }
        // Why not: the row as it is now, scoped by app (another app's nonce is simply unknown).
        guard let row = try connection.query(
            """
            SELECT owner, used_at IS NOT NULL AS used, expires_at <= now() AS expired FROM login_nonces
            WHERE nonce_hash = \(use.hash) AND app_id = \(appID)
            """
        ).first else { throw LoginNonceError.invalid }
        if try row.decode("owner", as: String.self) != use.owner { throw LoginNonceError.invalid }
        if try row.decode("used", as: Bool.self) { throw LoginNonceError.used }
        if try row.decode("expired", as: Bool.self) { throw LoginNonceError.expired }
        throw LoginNonceError.invalid
    }
}
