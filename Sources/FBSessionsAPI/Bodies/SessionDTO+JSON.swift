import FBSessionsCore
import HTTPServer
import Support

/// The session and list bodies written directly (``JSONWriter``) instead of through `JSONEncoder`, the one
/// description of them: keys in sorted order, as `.sortedKeys` writes them, the profile's from ``Profile/Field``.
/// The bytes are what `JSONEncoder` with `[.sortedKeys, .withoutEscapingSlashes]` makes of the same values (the
/// golden test SessionJSONTests checks it against values it builds from the contract).
extension SessionDTO {
    /// The profile object's keys in the order `.sortedKeys` writes them: each ``Profile/Field`` by its JSON name,
    /// and `refreshed_at` (no field) for the session's `profileRefreshedAt`.
    static let profileKeys: [(name: String, field: Profile.Field?)] =
        (Profile.Field.allCases.map { (name: $0.rawValue, field: Optional($0)) } + [(name: "refreshed_at", field: nil)])
        .sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }

    /// The JSON body.
    var jsonBytes: [UInt8] {
        var json = JSONWriter(capacity: 1024)
        write(to: &json)
        return json.bytes
    }

    /// Writes the body into `json` (on its own, or as an element of a list).
    func write(to json: inout JSONWriter) {
        json.beginObject()
        json.key("action_required")
        json.string(session.actionRequired?.rawValue)
        json.key("active")
        json.bool(session.active)
        json.key("closed_reason")
        json.string(session.closedReason?.rawValue)
        json.key("created_at")
        json.timestamp(session.createdAt)
        json.key("facebook_user_id")
        json.string(session.facebookUserID)
        json.key("id")
        json.string(session.id)
        json.key("login_kind")
        json.string(session.loginKind.rawValue)
        json.key("owner")
        json.string(session.owner)
        json.key("profile")
        if let profile = session.profile {
            json.beginObject()
            for key in Self.profileKeys {
                json.key(named: key.name)
                if let field = key.field {
                    json.string(profile[field])
                } else {
                    json.timestamp(session.profileRefreshedAt)
                }
            }
            json.endObject()
        } else {
            json.null()
        }
        if let revocation {
            json.key("revocation")
            json.string(revocation.rawValue)
        }
        json.key("slot")
        json.int(session.slot)
        json.key("state")
        json.string(session.state.rawValue)
        json.key("token")
        if session.state == .closed {
            json.null()
        } else {
            json.beginObject()
            json.key("data_access_expires_at")
            json.timestamp(session.dataAccessExpiresAt)
            json.key("declined_permissions")
            json.strings(session.declinedPermissions)
            json.key("expired_permissions")
            json.strings(session.expiredPermissions)
            json.key("expires_at")
            json.timestamp(session.tokenExpiresAt)
            json.key("granular_scopes")
            json.beginArray()
            for granted in session.granularScopes {
                // `.sortedKeys` order: `scope` before `target_ids`, which is left out as debug_token left it out.
                json.beginObject()
                json.key("scope")
                json.string(granted.scope)
                if let targetIDs = granted.targetIDs {
                    json.key("target_ids")
                    json.strings(targetIDs)
                }
                json.endObject()
            }
            json.endArray()
            json.key("permissions")
            json.strings(session.permissions)
            json.key("refreshed_at")
            json.timestamp(session.tokenRefreshedAt)
            json.endObject()
        }
        json.key("updated_at")
        json.timestamp(session.updatedAt)
        json.key("validated_at")
        json.timestamp(session.validatedAt)
        json.key("validation")
        json.string(validation.rawValue)
        json.endObject()
    }
}

extension OwnerRoutes.ListDTO {
    /// The JSON body: `{"active_session_id": ..., "sessions": [...]}`.
    var jsonBytes: [UInt8] {
        var json = JSONWriter(capacity: 1024 * (sessions.count + 1))
        json.beginObject()
        json.key("active_session_id")
        json.string(activeSessionID)
        json.key("sessions")
        json.beginArray()
        for session in sessions { session.write(to: &json) }
        json.endArray()
        json.endObject()
        return json.bytes
    }
}
