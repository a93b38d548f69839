import FBSessionsCore
import HTTPServer
import Support

/// The session and list bodies written directly (``JSONWriter``) instead of through `JSONEncoder`: the same
/// bytes as the `Encodable` conformances in SessionDTO.swift and OwnerRoutes, which stay as the reference the
/// golden test (SessionJSONTests) compares against. Keys are written in sorted order, as `.sortedKeys` does.
extension SessionDTO {
    /// The JSON body.
    var jsonBytes: [UInt8] {
        var json = JSONWriter(capacity: 1024)
        write(to: &json)
        return json.bytes
    }

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
            json.key("email")
            json.string(profile.email)
            json.key("first_name")
            json.string(profile.firstName)
            json.key("id")
            json.string(profile.id)
            json.key("last_name")
            json.string(profile.lastName)
            json.key("link")
            json.string(profile.link)
            json.key("middle_name")
            json.string(profile.middleName)
            json.key("name")
            json.string(profile.name)
            json.key("picture_url")
            json.string(profile.pictureURL)
            json.key("refreshed_at")
            json.timestamp(session.profileRefreshedAt)
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
