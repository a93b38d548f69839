import FBSessionsCore
import Foundation
import Postgres

/// The columns of `sessions` that make a ``Session`` (never the token), and the conversion.
///
/// The select list is declared once: ``Column`` for the session's own columns, then one column per
/// ``Profile/Field``. Every offset in a row comes from those two lists, so decoding names what it reads and a
/// profile field added to ``Profile`` is selected and read with no edit here.
enum SessionRow {
    /// The session's own columns, in select-list order: a column's `rawValue` is its offset from where
    /// ``columns`` starts in a row. The profile's columns follow them (``profileColumns``).
    enum Column: Int, CaseIterable {
        case id, appID, owner, slot, facebookUserID, state, closedReason, closedAt, actionRequired, tokenExpiresAt
        case dataAccessExpiresAt, tokenRefreshedAt, permissions, declinedPermissions, expiredPermissions
        case granularScopes, profileRefreshedAt, validatedAt, createdAt, updatedAt, loginKind, active, hasProfile

        /// The entry in the select list: a column of `sessions s`, or an expression with its name.
        var sql: String {
            switch self {
            case .id: "s.id"
            case .appID: "s.app_id"
            case .owner: "s.owner"
            case .slot: "s.slot"
            case .facebookUserID: "s.facebook_user_id"
            case .state: "s.state"
            case .closedReason: "s.closed_reason"
            case .closedAt: "s.closed_at"
            case .actionRequired: "s.action_required"
            case .tokenExpiresAt: "s.token_expires_at"
            case .dataAccessExpiresAt: "s.data_access_expires_at"
            case .tokenRefreshedAt: "s.token_refreshed_at"
            case .permissions: "s.permissions"
            case .declinedPermissions: "s.declined_permissions"
            case .expiredPermissions: "s.expired_permissions"
            case .granularScopes: "s.granular_scopes::text AS granular_scopes"
            case .profileRefreshedAt: "s.profile_refreshed_at"
            case .validatedAt: "s.validated_at"
            case .createdAt: "s.created_at"
            case .updatedAt: "s.updated_at"
            case .loginKind: "s.login_kind"
            case .active: "(o.active_session_id IS NOT NULL AND o.active_session_id = s.id) AS active"
            case .hasProfile: "s.profile IS NOT NULL AS has_profile"
            }
        }
    }

    /// Each profile field's column: after the ``Column``s, in ``Profile/Field`` order.
    private static let profileColumns: [(field: Profile.Field, offset: Int)] =
        Profile.Field.allCases.enumerated().map { index, field in (field, Column.allCases.count + index) }

    /// The select-list entries: the ``Column``s, then each profile field taken out of the jsonb column as text
    /// (`->>`), so that no JSON is parsed here (decoding the column with `JSONDecoder` was a tenth of the status
    /// path's CPU, docs/performance.md).
    private static let entries =
        Column.allCases.map(\.sql)
        + profileColumns.map { "s.profile->>'\($0.field.rawValue)' AS profile_\($0.field.rawValue)" }

    /// The select list.
    static let columns = SQLFragment(entries.joined(separator: ", "))

    /// The result name of each entry: what follows ` AS `, or the column's name after `s.`.
    private static let names = entries.map { entry in
        entry.range(of: " AS ").map { String(entry[$0.upperBound...]) } ?? String(entry.dropFirst(2))
    }

    /// `FROM sessions s LEFT JOIN owners o …`, to follow ``columns``.
    static let from: StaticString = "FROM sessions s LEFT JOIN owners o ON o.app_id = s.app_id AND o.owner = s.owner"

    /// The same join in parentheses, for the right side of a join (the batched reads).
    static let joined: StaticString = "(sessions s LEFT JOIN owners o ON o.app_id = s.app_id AND o.owner = s.owner)"

    /// The session in `row`, which holds ``columns`` (and maybe other columns before and after them).
    ///
    /// The columns are read by position from where ``columns`` starts in the row (found once by name, and checked
    /// against two other columns' names), which saves a name lookup per value.
    static func session(from row: PostgresRow) throws -> Session {
        let base = try start(in: row)
        func at(_ column: Column) -> Int { base + column.rawValue }
        var profile: Profile?
        if try row.decode(at(.hasProfile), as: Bool.self) {
            var read = Profile(id: "")
            for (field, offset) in profileColumns {
                if field == .id {
                    read.id = try row.decode(base + offset, as: String.self)
                } else {
                    read[field] = try row.decode(base + offset, as: String?.self)
                }
            }
            profile = read
        }
        let state = SessionState(rawValue: try row.decode(at(.state), as: String.self)) ?? .closed
        return Session(
            id: try row.decode(at(.id)), appID: try row.decode(at(.appID)), owner: try row.decode(at(.owner)),
            slot: try row.decode(at(.slot)), facebookUserID: try row.decode(at(.facebookUserID)), state: state,
            closedReason: try row.decode(at(.closedReason), as: String?.self).flatMap(ClosedReason.init(rawValue:)),
            closedAt: try row.decode(at(.closedAt), as: Date?.self),
            storedAction: try row.decode(at(.actionRequired), as: String?.self).flatMap(ActionRequired.init(rawValue:)),
            tokenExpiresAt: try row.decode(at(.tokenExpiresAt), as: Date?.self),
            dataAccessExpiresAt: try row.decode(at(.dataAccessExpiresAt), as: Date?.self),
            tokenRefreshedAt: try row.decode(at(.tokenRefreshedAt), as: Date?.self),
            permissions: try row.decode(at(.permissions)), declinedPermissions: try row.decode(at(.declinedPermissions)),
            expiredPermissions: try row.decode(at(.expiredPermissions)),
            granularScopes: try granularScopes(fromJSON: try row.decode(at(.granularScopes), as: String.self)),
            profile: profile,
            profileRefreshedAt: try row.decode(at(.profileRefreshedAt), as: Date?.self),
            validatedAt: try row.decode(at(.validatedAt), as: Date?.self), createdAt: try row.decode(at(.createdAt)),
            updatedAt: try row.decode(at(.updatedAt)), active: try row.decode(at(.active)),
            loginKind: LoginKind(rawValue: try row.decode(at(.loginKind), as: String.self)) ?? .standard)
    }

    /// Where ``columns`` starts in `row`: the first column named `id`, provided `has_profile` and the last of
    /// ``columns`` are where the list puts them.
    static func start(in row: PostgresRow) throws -> Int {
        let names = row.columns
        guard let base = row.position(of: "id"), base + Self.names.count <= names.count,
            names[base + Column.hasProfile.rawValue] == Self.names[Column.hasProfile.rawValue],
            names[base + Self.names.count - 1] == Self.names.last
        else {
            throw SessionRowLayoutError()
        }
        return base
    }

    /// One `sessions.granular_scopes` element (migration 0012): `target_ids` is left out when debug_token left it
    /// out.
    private struct StoredScope: Codable {
        let scope: String
        let targetIDs: [String]?

        enum CodingKeys: String, CodingKey {
            case scope
            case targetIDs = "target_ids"
        }
    }

    /// The `sessions.granular_scopes` jsonb text for `scopes`.
    static func granularScopesJSON(_ scopes: [GranularScope]) -> String {
        guard !scopes.isEmpty else { return "[]" }
        let stored = scopes.map { StoredScope(scope: $0.scope, targetIDs: $0.targetIDs) }
        return (try? String(decoding: JSONEncoder().encode(stored), as: UTF8.self)) ?? "[]"
    }

    /// The scopes in `sessions.granular_scopes` as text. Most sessions have none, and `[]` is read without a parser.
    static func granularScopes(fromJSON text: String) throws -> [GranularScope] {
        guard text != "[]" else { return [] }
        return try JSONDecoder().decode([StoredScope].self, from: Data(text.utf8)).map {
            GranularScope(scope: $0.scope, targetIDs: $0.targetIDs)
        }
    }

    /// The `sessions.profile` jsonb text: ``Profile``'s `Codable` object (absent fields left out).
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
