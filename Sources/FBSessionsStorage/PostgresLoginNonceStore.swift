import FBSessionsCore
import Foundation
import Postgres

/// ``LoginNonceStore`` over PostgreSQL (`login_nonces`, migration 0006). Nonces are keyed by the SHA-256 of their
/// text; times come from the database clock. A nonce is used up by the login that stores its session
/// (`PostgresSessionStore.useNonce`), in that login's transaction.
///
/// Used and expired nonces are kept for an hour after expiry, so that a late reuse is answered `nonce_used` or
/// `nonce_expired` rather than `invalid_nonce`; each new nonce deletes a bounded batch of older ones, and the
/// background sweep deletes the rest (``PostgresSessionStore/pruneLoginNonces(limit:)``).
public struct PostgresLoginNonceStore: LoginNonceStore {
    private let database: Database

    /// Creates the store.
    public init(database: Database) {
        self.database = database
    }

    public func saveNonce(hash: [UInt8], appID: String, owner: String, slot: Int?, lifetime: Double) async throws
        -> LoginNonce
    {
        try await database.run { connection in
            _ = try PostgresSessionStore.pruneNonces(limit: 100, on: connection)
            let rows = try connection.query(
                """
                INSERT INTO login_nonces (nonce_hash, app_id, owner, slot, expires_at)
                VALUES (\(hash), \(appID), \(owner), \(slot), now() + make_interval(secs => \(lifetime)))
                RETURNING created_at, expires_at
                """)
            guard let row = rows.first else { throw MigrationError("INSERT returned no row") }
            return LoginNonce(
                owner: owner, slot: slot, createdAt: try row.decode("created_at"), expiresAt: try row.decode("expires_at"))
        }
    }
}
