/// Why a token stopped working: the Graph error subcode that calls with it get (code 190).
public enum TokenInvalidation: Int, Sendable, CaseIterable {
    /// 458: the user removed the app (also what `DELETE /{id}/permissions` does to every token).
    case appNotInstalled = 458
    /// 459: the account is checkpointed.
    case checkpointed = 459
    /// 460: the password changed or Facebook reset the session.
    case passwordChanged = 460
    /// 463: the token expired (invalidating with it moves the expiry to now).
    case expired = 463
    /// 464: the user is not confirmed.
    case unconfirmedUser = 464
    /// 466: invalidated through an API call.
    case invalidatedByAPI = 466
    /// 467: the user logged out.
    case loggedOut = 467
    /// 493: data access expired (invalidating with it moves the data-access expiry to now; the token stays).
    case dataAccessExpired = 493
}

/// What a token is for; `debug_token` reports it as `type`.
public enum TokenKind: String, Sendable {
    /// A user access token (`USER`).
    case user = "USER"
    /// An app access token (`APP`).
    case app = "APP"
    /// A Page access token (`PAGE`).
    case page = "PAGE"
    /// A Business Integration System User access token (`SYSTEM_USER`; docs/facebook-graph.md §3.2 says how sure
    /// that value is).
    case systemUser = "SYSTEM_USER"
}

/// A snapshot of a token the emulator issued. Times are Unix seconds on the emulator's clock.
public struct IssuedToken: Sendable, Equatable {
    /// The token string (`EAA…`, or `APP_ID|…` for app tokens).
    public let accessToken: String
    /// The app it was issued for.
    public let appID: String
    /// The user it belongs to (nil for app tokens).
    public let userID: String?
    /// User, app or Page token.
    public let kind: TokenKind
    /// When it was issued.
    public let issuedAt: Int64
    /// When it expires; 0 means never.
    public let expiresAt: Int64
    /// When the app's access to the user's data expires; 0 for app tokens.
    public let dataAccessExpiresAt: Int64
    /// Whether it is a long-lived token (`debug_token` then reports `issued_at`).
    public let isLongLived: Bool
    /// Granted permissions, in grant order.
    public let granted: [String]
    /// Declined permissions.
    public let declined: [String]
    /// Expired permissions.
    public let expired: [String]
    /// Why it was invalidated, or nil while it has not been.
    public let invalidation: TokenInvalidation?
    /// The Page id of a Page token.
    public let pageID: String?
    /// The asset ids each permission was granted on (Facebook Login for Business); `debug_token` lists them as
    /// `granular_scopes` `target_ids`. A permission without an entry applies to all objects.
    public let targets: [String: [String]]

    /// Seconds until expiry from `now` (what `expires_in` says), or nil for a token that never expires.
    public func expiresIn(now: Int64) -> Int64? {
        expiresAt == 0 ? nil : max(0, expiresAt - now)
    }
}
