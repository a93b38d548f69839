import FBSessionsCore
import Support

/// A session on the wire (docs/api-contract.md, "Session JSON"). Never carries the token itself.
struct SessionDTO: Encodable {
    struct TokenDTO: Encodable {
        let expiresAt: String?
        let dataAccessExpiresAt: String?
        let refreshedAt: String?
        let permissions: [String]
        let declinedPermissions: [String]
        let expiredPermissions: [String]

        enum CodingKeys: String, CodingKey {
            case permissions
            case expiresAt = "expires_at"
            case dataAccessExpiresAt = "data_access_expires_at"
            case refreshedAt = "refreshed_at"
            case declinedPermissions = "declined_permissions"
            case expiredPermissions = "expired_permissions"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(expiresAt, forKey: .expiresAt)
            try container.encode(dataAccessExpiresAt, forKey: .dataAccessExpiresAt)
            try container.encode(refreshedAt, forKey: .refreshedAt)
            try container.encode(permissions, forKey: .permissions)
            try container.encode(declinedPermissions, forKey: .declinedPermissions)
            try container.encode(expiredPermissions, forKey: .expiredPermissions)
        }
    }

    struct ProfileDTO: Encodable {
        let profile: Profile
        let refreshedAt: String?

        enum CodingKeys: String, CodingKey {
            case id, name, email, link
            case firstName = "first_name"
            case middleName = "middle_name"
            case lastName = "last_name"
            case pictureURL = "picture_url"
            case refreshedAt = "refreshed_at"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(profile.id, forKey: .id)
            try container.encode(profile.name, forKey: .name)
            try container.encode(profile.firstName, forKey: .firstName)
            try container.encode(profile.middleName, forKey: .middleName)
            try container.encode(profile.lastName, forKey: .lastName)
            try container.encode(profile.email, forKey: .email)
            try container.encode(profile.link, forKey: .link)
            try container.encode(profile.pictureURL, forKey: .pictureURL)
            try container.encode(refreshedAt, forKey: .refreshedAt)
        }
    }

    let session: Session
    let validation: SessionService.Validation
    var revocation: SessionService.Revocation?

    enum CodingKeys: String, CodingKey {
        case id, owner, slot, active, state, validation, token, profile, revocation
        case closedReason = "closed_reason"
        case actionRequired = "action_required"
        case validatedAt = "validated_at"
        case facebookUserID = "facebook_user_id"
        case loginKind = "login_kind"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(session.id, forKey: .id)
        try container.encode(session.loginKind.rawValue, forKey: .loginKind)
        try container.encode(session.owner, forKey: .owner)
        try container.encode(session.slot, forKey: .slot)
        try container.encode(session.active, forKey: .active)
        try container.encode(session.state.rawValue, forKey: .state)
        try container.encode(session.closedReason?.rawValue, forKey: .closedReason)
        try container.encode(session.actionRequired?.rawValue, forKey: .actionRequired)
        try container.encode(validation.rawValue, forKey: .validation)
        try container.encode(session.validatedAt.map(RFC3339.string), forKey: .validatedAt)
        try container.encode(session.facebookUserID, forKey: .facebookUserID)
        if session.state == .closed {
            try container.encodeNil(forKey: .token)
        } else {
            try container.encode(
                TokenDTO(
                    expiresAt: session.tokenExpiresAt.map(RFC3339.string),
                    dataAccessExpiresAt: session.dataAccessExpiresAt.map(RFC3339.string),
                    refreshedAt: session.tokenRefreshedAt.map(RFC3339.string), permissions: session.permissions,
                    declinedPermissions: session.declinedPermissions, expiredPermissions: session.expiredPermissions),
                forKey: .token)
        }
        try container.encode(
            session.profile.map { ProfileDTO(profile: $0, refreshedAt: session.profileRefreshedAt.map(RFC3339.string)) },
            forKey: .profile)
        try container.encode(RFC3339.string(from: session.createdAt), forKey: .createdAt)
        try container.encode(RFC3339.string(from: session.updatedAt), forKey: .updatedAt)
        if let revocation { try container.encode(revocation.rawValue, forKey: .revocation) }
    }
}
