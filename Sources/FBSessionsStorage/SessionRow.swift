import FBSessionsCore
import Foundation
import Postgres

/// The columns of `sessions` that make a ``Session`` (never the token), and the conversion.
enum SessionRow {
    static let columns: StaticString = """
        s.id, s.app_id, s.owner, s.slot, s.facebook_user_id, s.state, s.closed_reason, s.closed_at, \
        s.action_required, s.token_expires_at, s.data_access_expires_at, s.token_refreshed_at, s.permissions, \
        s.declined_permissions, s.expired_permissions, s.profile IS NOT NULL AS has_profile, \
        s.profile->>'id' AS profile_id, s.profile->>'name' AS profile_name, \
        s.profile->>'first_name' AS profile_first_name, s.profile->>'middle_name' AS profile_middle_name, \
        s.profile->>'last_name' AS profile_last_name, s.profile->>'email' AS profile_email, \
        s.profile->>'link' AS profile_link, s.profile->>'picture_url' AS profile_picture_url, s.profile_refreshed_at, \
        s.validated_at, s.created_at, s.updated_at, \
        (o.active_session_id IS NOT NULL AND o.active_session_id = s.id) AS active
        """

    /// `FROM sessions s LEFT JOIN owners o …`, to follow ``columns``.
    static let from: StaticString = "FROM sessions s LEFT JOIN owners o ON o.app_id = s.app_id AND o.owner = s.owner"

    /// The same join in parentheses, for the right side of a join (``KeyLiveness``).
    static let joined: StaticString = "(sessions s LEFT JOIN owners o ON o.app_id = s.app_id AND o.owner = s.owner)"

    /// The profile's fields come out of the jsonb column one by one (`->>`), so no JSON is parsed here: decoding
    /// the column with `JSONDecoder` was a tenth of the status path's CPU (docs/performance.md).
    static func session(from row: PostgresRow) throws -> Session {
        var profile: Profile?
        if try row.decode("has_profile", as: Bool.self) {
            profile = Profile(
                id: try row.decode("profile_id", as: String.self), name: try row.decode("profile_name"),
                firstName: try row.decode("profile_first_name"), middleName: try row.decode("profile_middle_name"),
                lastName: try row.decode("profile_last_name"), email: try row.decode("profile_email"),
                link: try row.decode("profile_link"), pictureURL: try row.decode("profile_picture_url"))
        }
        let state = SessionState(rawValue: try row.decode("state", as: String.self)) ?? .closed
        return Session(
            id: try row.decode("id"), appID: try row.decode("app_id"), owner: try row.decode("owner"),
            slot: try row.decode("slot"), facebookUserID: try row.decode("facebook_user_id"), state: state,
            closedReason: try row.decode("closed_reason", as: String?.self).flatMap(ClosedReason.init(rawValue:)),
            closedAt: try row.decode("closed_at", as: Date?.self),
            storedAction: try row.decode("action_required", as: String?.self).flatMap(ActionRequired.init(rawValue:)),
            tokenExpiresAt: try row.decode("token_expires_at", as: Date?.self),
            dataAccessExpiresAt: try row.decode("data_access_expires_at", as: Date?.self),
            tokenRefreshedAt: try row.decode("token_refreshed_at", as: Date?.self),
            permissions: try row.decode("permissions"), declinedPermissions: try row.decode("declined_permissions"),
            expiredPermissions: try row.decode("expired_permissions"), profile: profile,
            profileRefreshedAt: try row.decode("profile_refreshed_at", as: Date?.self),
            validatedAt: try row.decode("validated_at", as: Date?.self), createdAt: try row.decode("created_at"),
            updatedAt: try row.decode("updated_at"), active: try row.decode("active"))
    }

    static func profileJSON(_ profile: Profile) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? String(decoding: encoder.encode(profile), as: UTF8.self)) ?? "{}"
    }
}

/// Writing events inside the caller's transaction.
enum EventWriter {
    static func write(_ events: [SessionEvent], appID: String, on connection: PostgresConnection) throws {
        for event in events {
            try connection.execute(
                """
                INSERT INTO events (app_id, type, session_id, owner, data)
                VALUES (\(appID), \(event.kind.rawValue), \(event.sessionID), \(event.owner), \(event.dataJSON)::jsonb)
                """)
        }
        if !events.isEmpty {
            try connection.execute("SELECT pg_notify('fbs_events', \(appID))")
        }
    }
}
