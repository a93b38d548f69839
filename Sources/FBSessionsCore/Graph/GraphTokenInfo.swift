import Foundation

/// What `debug_token` says about a token (docs/facebook-graph.md §3.2).
///
/// A token Graph rejects comes back as a value, not a thrown error: `debug_token` answers HTTP 200 with
/// `is_valid: false` and a `data.error` for a bad input token (§3.3), and that is a fact about the inspected token,
/// not a failed call. `failure` turns it into the typed error the token would cause. (`GraphAPI.debugToken`
/// throws only when the call itself fails, or when `data.error` is transient or a rate limit.)
public struct GraphTokenInfo: Sendable, Hashable {
    /// One entry of `granular_scopes`: a permission and, for Facebook Login for Business and Page permissions, the
    /// assets (Pages, ad accounts, businesses, ...) it was granted on.
    public struct GranularScope: Sendable, Hashable {
        /// The permission, for example `pages_show_list`.
        public var scope: String
        /// The object ids it is limited to, as `debug_token` listed them; nil when `debug_token` left `target_ids`
        /// out, which it does when the permission applies to all objects (docs/facebook-graph.md §3.2).
        public var targetIDs: [String]?

        /// Creates an entry.
        /// - Parameters:
        ///   - scope: the permission.
        ///   - targetIDs: the ids it is limited to; nil when it applies to all.
        public init(scope: String, targetIDs: [String]? = nil) {
            self.scope = scope
            self.targetIDs = targetIDs
        }
    }

    /// `is_valid`.
    public var isValid: Bool
    /// `app_id`: the app the token was issued for (compare with the caller's app).
    public var appID: String?
    /// `user_id`: the app-scoped user id.
    public var userID: String?
    /// `type`: `USER`, `APP`, `PAGE` or `SYSTEM_USER`; nil when `debug_token` left it out.
    public var type: String?
    /// `application`: the app's name.
    public var application: String?
    /// `expires_at`; `nil` when Graph said 0 or nothing (the token does not expire).
    public var expiresAt: Date?
    /// `data_access_expires_at`; `nil` when 0 or absent.
    public var dataAccessExpiresAt: Date?
    /// `issued_at` (long-lived tokens only).
    public var issuedAt: Date?
    /// `scopes`: the granted permissions.
    public var scopes: [String]
    /// `granular_scopes`.
    public var granularScopes: [GranularScope]
    /// `profile_id` (Page tokens).
    public var profileID: String?
    /// The string values of `metadata` (`auth_type`, `sso`, `auth_nonce`, ...).
    public var metadata: [String: String]
    /// `error`: why the token is invalid, when it is.
    public var error: GraphErrorDetail?

    /// Creates a value.
    public init(
        isValid: Bool,
        appID: String? = nil,
        userID: String? = nil,
        type: String? = nil,
        application: String? = nil,
        expiresAt: Date? = nil,
        dataAccessExpiresAt: Date? = nil,
        issuedAt: Date? = nil,
        scopes: [String] = [],
        granularScopes: [GranularScope] = [],
        profileID: String? = nil,
        metadata: [String: String] = [:],
        error: GraphErrorDetail? = nil
    ) {
        self.isValid = isValid
        self.appID = appID
        self.userID = userID
        self.type = type
        self.application = application
        self.expiresAt = expiresAt
        self.dataAccessExpiresAt = dataAccessExpiresAt
        self.issuedAt = issuedAt
        self.scopes = scopes
        self.granularScopes = granularScopes
        self.profileID = profileID
        self.metadata = metadata
        self.error = error
    }

    /// Whether this is a person's user token (`type == "USER"`). A missing `type` is not: the login refuses it
    /// (docs/facebook-graph.md §3.4).
    public var isUserToken: Bool {
        type == "USER"
    }

    /// Whether the token was issued for the app `appID` (docs/facebook-graph.md §3.4: never assume a token came from
    /// your app). A token issued for another app must be refused even when it is valid.
    /// - Parameter appID: the caller's Facebook app id.
    public func isIssued(forApp appID: String) -> Bool {
        self.appID == appID
    }

    /// The error this token causes, or `nil` when `isValid`.
    ///
    /// With `data.error`, it is `GraphError.classify` of it (190/463 gives `invalidToken(.tokenExpired, …)`,
    /// 190/493 `dataAccessExpired`). Without one, an invalid token gives `invalidToken(.tokenExpired, …)` when
    /// `expiresAt` has passed and `invalidToken(.tokenInvalid, …)` otherwise, with a local detail (code 190).
    /// - Parameter now: the current time, for the expiry check.
    /// - Returns: the typed error, or `nil`.
    public func failure(now: Date = Date()) -> GraphError? {
        guard !isValid else {
            return nil
        }
        if let error {
            return GraphError.classify(error)
        }
        if let expiresAt, expiresAt <= now {
            let detail = GraphErrorDetail(code: 190, subcode: 463, message: "debug_token: is_valid false, expired")
            return .invalidToken(.tokenExpired, detail)
        }
        return .invalidToken(.tokenInvalid, GraphErrorDetail(code: 190, message: "debug_token: is_valid false"))
    }
}
