import Crypto
import Foundation

/// Where a session stands (docs/api-contract.md, "States").
public enum SessionState: String, Sendable, Codable {
    /// The token was valid at the last validation, within the TTL.
    case open
    /// A token is stored but not confirmed within the TTL (not asked, or Graph unreachable). Never a logout.
    case tokenLoaded = "token_loaded"
    /// Logged out or invalid; token and profile erased, the tombstone kept.
    case closed
}

/// What the backend should do next for a session.
public enum ActionRequired: String, Sendable, Codable {
    /// Data access expired: log in again with `auth_type=reauthorize`.
    case reauthorize
    /// Permissions the app requires were declined: log in with `auth_type=rerequest`.
    case rerequest
    /// The session is closed: log in again.
    case login
}

/// A Facebook profile as stored with a session.
public struct Profile: Sendable, Equatable, Codable {
    /// The app-scoped user id.
    public var id: String
    /// Full name.
    public var name: String?
    /// First name.
    public var firstName: String?
    /// Middle name.
    public var middleName: String?
    /// Last name.
    public var lastName: String?
    /// Email, when the `email` permission is granted.
    public var email: String?
    /// Profile link, when `user_link` is granted.
    public var link: String?
    /// The picture URL Graph gave (it expires; the service serves pictures itself).
    public var pictureURL: String?

    enum CodingKeys: String, CodingKey {
        case id, name, email, link
        case firstName = "first_name"
        case middleName = "middle_name"
        case lastName = "last_name"
        case pictureURL = "picture_url"
    }

    /// Creates a profile.
    public init(
        id: String, name: String? = nil, firstName: String? = nil, middleName: String? = nil, lastName: String? = nil,
        email: String? = nil, link: String? = nil, pictureURL: String? = nil
    ) {
        self.id = id
        self.name = name
        self.firstName = firstName
        self.middleName = middleName
        self.lastName = lastName
        self.email = email
        self.link = link
        self.pictureURL = pictureURL
    }

    /// The profile Graph returned.
    public init(_ graph: GraphProfile) {
        self.init(
            id: graph.id, name: graph.name, firstName: graph.firstName, middleName: graph.middleName,
            lastName: graph.lastName, email: graph.email, link: graph.link, pictureURL: graph.pictureURL)
    }

    /// The names of the fields that differ from `other` (for `profile.changed`); the picture URL is left out
    /// because Graph signs it anew on every call.
    public func changedFields(from other: Profile) -> [String] {
        var fields: [String] = []
        if name != other.name { fields.append("name") }
        if firstName != other.firstName { fields.append("first_name") }
        if middleName != other.middleName { fields.append("middle_name") }
        if lastName != other.lastName { fields.append("last_name") }
        if email != other.email { fields.append("email") }
        if link != other.link { fields.append("link") }
        return fields
    }
}

/// One Facebook account logged in for one owner of one app. Never carries the token itself.
public struct Session: Sendable, Equatable {
    /// `ses_` + 128 random bits, URL-safe.
    public var id: String
    /// The app.
    public var appID: String
    /// The backend's user id.
    public var owner: String
    /// 0..<max slots.
    public var slot: Int
    /// The app-scoped Facebook user id.
    public var facebookUserID: String
    /// State.
    public var state: SessionState
    /// Why it closed.
    public var closedReason: ClosedReason?
    /// When it closed.
    public var closedAt: Date?
    /// `reauthorize` or `rerequest` as stored; ``actionRequired`` adds `login` for closed sessions.
    public var storedAction: ActionRequired?
    /// When the token expires (nil: never).
    public var tokenExpiresAt: Date?
    /// When data access expires.
    public var dataAccessExpiresAt: Date?
    /// When the token was last obtained or extended.
    public var tokenRefreshedAt: Date?
    /// Granted permissions.
    public var permissions: [String]
    /// Declined permissions.
    public var declinedPermissions: [String]
    /// Expired permissions.
    public var expiredPermissions: [String]
    /// The profile (nil once closed).
    public var profile: Profile?
    /// When the profile was last read from Graph.
    public var profileRefreshedAt: Date?
    /// When Graph last confirmed the token.
    public var validatedAt: Date?
    /// Created.
    public var createdAt: Date
    /// Last changed.
    public var updatedAt: Date
    /// Whether it is the owner's active session.
    public var active: Bool
    /// How the person logged in (`login_kind`).
    public var loginKind: LoginKind

    /// What the backend should do next.
    public var actionRequired: ActionRequired? { state == .closed ? .login : storedAction }

    /// Creates a session value.
    public init(
        id: String, appID: String, owner: String, slot: Int, facebookUserID: String, state: SessionState,
        closedReason: ClosedReason? = nil, closedAt: Date? = nil, storedAction: ActionRequired? = nil,
        tokenExpiresAt: Date? = nil, dataAccessExpiresAt: Date? = nil, tokenRefreshedAt: Date? = nil,
        permissions: [String] = [], declinedPermissions: [String] = [], expiredPermissions: [String] = [],
        profile: Profile? = nil, profileRefreshedAt: Date? = nil, validatedAt: Date? = nil, createdAt: Date,
        updatedAt: Date, active: Bool = false, loginKind: LoginKind = .standard
    ) {
        self.id = id
        self.appID = appID
        self.owner = owner
        self.slot = slot
        self.facebookUserID = facebookUserID
        self.state = state
        self.closedReason = closedReason
        self.closedAt = closedAt
        self.storedAction = storedAction
        self.tokenExpiresAt = tokenExpiresAt
        self.dataAccessExpiresAt = dataAccessExpiresAt
        self.tokenRefreshedAt = tokenRefreshedAt
        self.permissions = permissions
        self.declinedPermissions = declinedPermissions
        self.expiredPermissions = expiredPermissions
        self.profile = profile
        self.profileRefreshedAt = profileRefreshedAt
        self.validatedAt = validatedAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.active = active
        self.loginKind = loginKind
    }

    /// A new session id: `ses_` + 128 random bits in base64url.
    public static func newID() -> String {
        "ses_" + Base64URL.encode(SecureRandom.bytes(16))
    }

    /// Whether `text` is shaped like a session id (before any lookup).
    public static func isWellFormedID(_ text: String) -> Bool {
        text.hasPrefix("ses_") && (20...64).contains(text.utf8.count)
            && text.utf8.dropFirst(4).allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == 0x2D || byte == 0x5F
            }
    }
}
