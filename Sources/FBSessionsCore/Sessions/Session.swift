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

/// Why a session's `action_required` was set: the `reason` of a `session.action_required` event (snake_case).
public enum ActionReason: String, Sendable, CaseIterable {
    /// Graph answered 190/493 (data access expired): `reauthorize`.
    case dataAccessExpired = "data_access_expired"
    /// A permission the app requires was declined by the person: `rerequest`.
    case permissionDeclined = "permission_declined"
    /// A permission the app requires has expired (Graph lists it as `expired`): `rerequest`.
    case permissionExpired = "permission_expired"
    /// A permission the app requires was never granted (not asked, or removed): `rerequest`.
    case permissionMissing = "permission_missing"

    /// The reason an action gets when its cause is not known more precisely (a record made without one).
    public static func usual(for action: ActionRequired) -> ActionReason {
        switch action {
        case .reauthorize: .dataAccessExpired
        case .rerequest, .login: .permissionDeclined
        }
    }
}

/// One entry of a session's `granular_scopes` (``GraphTokenInfo/GranularScope``).
public typealias GranularScope = GraphTokenInfo.GranularScope

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
    /// `debug_token`'s `granular_scopes` at the last login: each permission with the assets it was granted on
    /// (Facebook Login for Business). Empty for Limited Login and once closed.
    public var granularScopes: [GranularScope]
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
        granularScopes: [GranularScope] = [], profile: Profile? = nil, profileRefreshedAt: Date? = nil,
        validatedAt: Date? = nil, createdAt: Date, updatedAt: Date, active: Bool = false,
        loginKind: LoginKind = .standard
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
        self.granularScopes = granularScopes
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
