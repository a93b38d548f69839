import FBSessionsCore
import Foundation
import Postgres

/// ``LoginStateStore`` over PostgreSQL (`login_states`, migration 0004). States are keyed by the SHA-256 of their
/// text; times come from the database clock. Using a state is one `UPDATE … WHERE used_at IS NULL AND expires_at >
/// now() RETURNING`, so two requests racing with one state cannot both win.
///
/// Used and expired states are kept for an hour after expiry, so that a late reuse is answered `state_used` or
/// `state_expired` rather than `invalid_state`; each new state deletes a bounded batch of older ones.
public struct PostgresLoginStateStore: LoginStateStore {
    private let database: Database

    /// Creates the store.
    public init(database: Database) {
        self.database = database
    }

    public func saveState(hash: [UInt8], draft: LoginStateDraft, lifetime: Double) async throws -> LoginState {
        try await database.run { connection in
            try connection.execute(
                """
                DELETE FROM login_states WHERE state_hash IN (
                    SELECT state_hash FROM login_states WHERE expires_at < now() - interval '1 hour' LIMIT 100)
                """)
            let rows = try connection.query(
                """
                INSERT INTO login_states (state_hash, app_id, owner, redirect_uri, slot, scopes, auth_type, auth_nonce,
                                          config_id, expires_at)
                VALUES (\(hash), \(draft.appID), \(draft.owner), \(draft.redirectURI), \(draft.slot), \(draft.scopes),
                        \(draft.authType?.rawValue), \(draft.authNonce), \(draft.configID),
                        now() + make_interval(secs => \(lifetime)))
                RETURNING created_at, expires_at
                """)
            guard let row = rows.first else { throw MigrationError("INSERT returned no row") }
            return LoginState(draft: draft, createdAt: try row.decode("created_at"), expiresAt: try row.decode("expires_at"))
        }
    }

    public func consumeState(hash: [UInt8], appID: String, owner: String) async throws -> StateConsumption {
        try await database.run { connection in
            let used = try connection.query(
                """
                UPDATE login_states SET used_at = now()
                WHERE state_hash = \(hash) AND app_id = \(appID) AND owner = \(owner)
                  AND used_at IS NULL AND expires_at > now()
                RETURNING \(unsafeSQL: Self.columns)
                """)
            if let row = used.first { return .consumed(try Self.state(from: row)) }
            // Why not: read the row as it is now (scoped by app, so another app's state is simply unknown).
            guard let row = try connection.query(
                """
                SELECT owner, used_at IS NOT NULL AS used, expires_at <= now() AS expired FROM login_states
                WHERE state_hash = \(hash) AND app_id = \(appID)
                """
            ).first else { return .unknown }
            if try row.decode("owner", as: String.self) != owner { return .otherOwner }
            if try row.decode("used", as: Bool.self) { return .used }
            if try row.decode("expired", as: Bool.self) { return .expired }
            return .unknown
        }
    }

    public func releaseState(hash: [UInt8], appID: String) async throws {
        try await database.run { connection in
            _ = try connection.execute(
                "UPDATE login_states SET used_at = NULL WHERE state_hash = \(hash) AND app_id = \(appID)")
        }
    }

    private static let columns: StaticString =
        "app_id, owner, redirect_uri, slot, scopes, auth_type, auth_nonce, config_id, created_at, expires_at"

    private static func state(from row: PostgresRow) throws -> LoginState {
        let draft = LoginStateDraft(
            appID: try row.decode("app_id"), owner: try row.decode("owner"), redirectURI: try row.decode("redirect_uri"),
            slot: try row.decode("slot", as: Int?.self), scopes: try row.decode("scopes", as: [String].self),
            authType: try row.decode("auth_type", as: String?.self).flatMap(AuthType.init(rawValue:)),
            authNonce: try row.decode("auth_nonce", as: String?.self),
            configID: try row.decode("config_id", as: String?.self))
        return LoginState(draft: draft, createdAt: try row.decode("created_at"), expiresAt: try row.decode("expires_at"))
    }
}
