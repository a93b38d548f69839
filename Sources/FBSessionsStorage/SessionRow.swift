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
        s.validated_at, s.created_at, s.updated_at, s.login_kind, \
        (o.active_session_id IS NOT NULL AND o.active_session_id = s.id) AS active
        """

    /// `FROM sessions s LEFT JOIN owners o …`, to follow ``columns``.
    static let from: StaticString = "FROM sessions s LEFT JOIN owners o ON o.app_id = s.app_id AND o.owner = s.owner"

    /// The same join in parentheses, for the right side of a join (``KeyLiveness``).
    static let joined: StaticString = "(sessions s LEFT JOIN owners o ON o.app_id = s.app_id AND o.owner = s.owner)"

    /// The profile's fields come out of the jsonb column one by one (`->>`), so no JSON is parsed here: decoding
    /// the column with `JSONDecoder` was a tenth of the status path's CPU (docs/performance.md).
    ///
    /// The columns are read by position from where ``columns`` starts in the row (found once by name, and checked
    /// against the last column's name), which saves a name lookup per value.
    static func session(from row: PostgresRow) throws -> Session {
        let base = try start(in: row)
        func at(_ offset: Int) -> Int { base + offset }
        var profile: Profile?
        if try row.decode(at(15), as: Bool.self) {
            profile = Profile(
                id: try row.decode(at(16), as: String.self), name: try row.decode(at(17)),
                firstName: try row.decode(at(18)), middleName: try row.decode(at(19)),
                lastName: try row.decode(at(20)), email: try row.decode(at(21)),
                link: try row.decode(at(22)), pictureURL: try row.decode(at(23)))
        }
        let state = SessionState(rawValue: try row.decode(at(5), as: String.self)) ?? .closed
        return Session(
            id: try row.decode(at(0)), appID: try row.decode(at(1)), owner: try row.decode(at(2)),
            slot: try row.decode(at(3)), facebookUserID: try row.decode(at(4)), state: state,
            closedReason: try row.decode(at(6), as: String?.self).flatMap(ClosedReason.init(rawValue:)),
            closedAt: try row.decode(at(7), as: Date?.self),
            storedAction: try row.decode(at(8), as: String?.self).flatMap(ActionRequired.init(rawValue:)),
            tokenExpiresAt: try row.decode(at(9), as: Date?.self),
            dataAccessExpiresAt: try row.decode(at(10), as: Date?.self),
            tokenRefreshedAt: try row.decode(at(11), as: Date?.self),
            permissions: try row.decode(at(12)), declinedPermissions: try row.decode(at(13)),
            expiredPermissions: try row.decode(at(14)), profile: profile,
            profileRefreshedAt: try row.decode(at(24), as: Date?.self),
            validatedAt: try row.decode(at(25), as: Date?.self), createdAt: try row.decode(at(26)),
            updatedAt: try row.decode(at(27)), active: try row.decode(at(lastColumn)),
            loginKind: LoginKind(rawValue: try row.decode(at(28), as: String.self)) ?? .standard)
    }

    /// The offset of `active`, the last of ``columns``.
    private static let lastColumn = 29

    /// Where ``columns`` starts in `row`: the first column named `id`, provided `active` is 29 columns later.
    static func start(in row: PostgresRow) throws -> Int {
        let names = row.columns
        guard let base = row.position(of: "id"), base + lastColumn < names.count, names[base + 5] == "state",
            names[base + lastColumn] == "active"
        else {
            throw SessionRowLayoutError()
        }
        return base
    }

    static func profileJSON(_ profile: Profile) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? String(decoding: encoder.encode(profile), as: UTF8.self)) ?? "{}"
    }
}

/// A statement's columns are not laid out as ``SessionRow/columns`` (a programming error caught by the tests).
struct SessionRowLayoutError: Error {}

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
