import FBSessionsCore
import Foundation
import Postgres

/// Limited Login refresh: replacing a session's token with a later one (``SessionStore/storeRefresh(_:)``).
extension PostgresSessionStore {
    /// One conditional `UPDATE` decides: it matches the row only while the session is open, limited, of the token's
    /// `sub`, and holds a token issued before this one (`token_issued_at`, migration 0011). Of two transactions
    /// racing with one token, the second waits for the first's row lock and, the first having committed, finds
    /// `token_issued_at` equal to its own `iat`: no row, `not_newer`. Only when nothing matched is the row read
    /// again, to name the refusal; nothing is written then.
    ///
    /// The statement's `before` reads the row as it was, under the same row lock (`FOR UPDATE` waits for a racing
    /// writer and then sees what it committed), for the events: the profile fields that changed, whether the
    /// device-key binding changed, and whether the picture URL did (then the picture cached from the old URL is
    /// dropped, so the picture route fetches the new one).
    public func storeRefresh(_ refresh: RefreshRecord) async throws -> Session {
        let sealed = try keyringSeal(refresh.token, sessionID: refresh.sessionID)
        let profile = SessionRow.profileJSON(refresh.profile)
        let (id, appID) = (refresh.sessionID, refresh.appID)
        return try await databaseTransaction { connection in
            try Self.lockOwner(ofSession: id, appID: appID, on: connection)
            let updated = try connection.query(
                """
                WITH before AS (
                    SELECT id, profile::text AS profile, token_binding FROM sessions
                    WHERE id = \(id) AND app_id = \(appID) FOR UPDATE
                )
                UPDATE sessions s SET token_key_id = \(sealed.keyID), token_box = \(sealed.box),
                    token_expires_at = \(refresh.expiresAt), token_issued_at = \(refresh.issuedAt),
                    token_binding = \(refresh.deviceKeyThumbprint), token_refreshed_at = now(),
                    permissions = \(refresh.permissions.granted), declined_permissions = \(refresh.permissions.declined),
                    expired_permissions = \(refresh.permissions.expired), profile = \(profile)::jsonb,
                    profile_refreshed_at = now(), validated_at = now(), updated_at = now()
                FROM before
                WHERE s.id = before.id AND s.app_id = \(appID) AND s.state <> 'closed' AND s.login_kind = 'limited'
                    AND s.facebook_user_id = \(refresh.facebookUserID)
                    AND coalesce(s.token_issued_at, s.token_refreshed_at, s.created_at) < \(refresh.issuedAt)
                RETURNING s.owner, before.profile AS previous_profile, before.token_binding AS previous_binding
                """)
            guard let row = updated.first else { throw try Self.refreshRefusal(refresh, on: connection) }
            let owner = try row.decode("owner", as: String.self)
            let previous = try row.decode("previous_profile", as: String?.self).flatMap {
                try? JSONDecoder().decode(Profile.self, from: Data($0.utf8))
            }
            let previousBinding = try row.decode("previous_binding", as: String?.self)
            var events = [
                SessionEvent(
                    .tokenChanged, sessionID: id, owner: owner,
                    data: [
                        "user_changed": .bool(false), "login_kind": .string(LoginKind.limited.rawValue),
                        "binding_changed": .bool(refresh.changesBinding(from: previousBinding)),
                    ])
            ]
            let fields = previous.map { refresh.profile.changedFields(from: $0) } ?? []
            if !fields.isEmpty {
                events.append(SessionEvent(.profileChanged, sessionID: id, owner: owner, data: ["fields": .strings(fields)]))
            }
            if previous?.pictureURL != refresh.profile.pictureURL {
                try Self.dropLimitedPicture(appID: appID, facebookUserID: refresh.facebookUserID, on: connection)
            }
            try EventWriter.write(events, appID: appID, on: connection)
            guard let session = try Self.read(id, appID: appID, on: connection) else { throw SessionError.notFound }
            return session
        }
    }

    /// Why the refresh's `UPDATE` matched no row, from the row as it is now: unknown (or another app's), closed,
    /// standard, or (``RefreshRecord/refusal(storedUserID:)``) another person's or not newer.
    private static func refreshRefusal(_ refresh: RefreshRecord, on connection: PostgresConnection) throws -> any Error {
        guard let row = try connection.query(
            """
            SELECT state, login_kind, facebook_user_id FROM sessions
            WHERE id = \(refresh.sessionID) AND app_id = \(refresh.appID)
            """
        ).first else { return SessionError.notFound }
        if try row.decode("state", as: String.self) == SessionState.closed.rawValue { return SessionError.closed }
        if try row.decode("login_kind", as: String.self) != LoginKind.limited.rawValue { return SessionError.notLimited }
        return refresh.refusal(storedUserID: try row.decode("facebook_user_id", as: String.self))
    }

    /// Drops the picture cached for a limited session's person (one key whatever the size,
    /// ``PictureService/limitedSizeKey``) when a new token names another picture URL: that copy was kept for the
    /// session's whole life because its URL could not be renewed, and now it can. The deletion is announced to every
    /// instance's exact cache (migration 0009), so the next picture request fetches the new URL.
    static func dropLimitedPicture(appID: String, facebookUserID: String, on connection: PostgresConnection) throws {
        try connection.execute(
            """
            DELETE FROM picture_cache WHERE app_id = \(appID) AND facebook_user_id = \(facebookUserID)
                AND size_key = \(PictureService.limitedSizeKey)
            """)
    }
}
