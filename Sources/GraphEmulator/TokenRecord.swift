/// The emulator's record of a token; mutable, kept under the state lock.
struct TokenRecord: Sendable {
    var string: String
    var appID: String
    var userID: String?
    var kind: TokenKind
    var issuedAt: Int64
    var expiresAt: Int64
    var dataAccessExpiresAt: Int64
    var isLongLived: Bool
    var granted: [String]
    var declined: [String]
    var expired: [String]
    var invalidation: TokenInvalidation?
    var pageID: String?
    var pageName: String?
    /// `debug_token` metadata: `auth_type`, `auth_nonce`, `sso`.
    var metadata: [(String, String)] = []
    /// The asset ids per permission (`granular_scopes` `target_ids`).
    var targets: [String: [String]] = [:]

    var snapshot: IssuedToken {
        IssuedToken(
            accessToken: string, appID: appID, userID: userID, kind: kind, issuedAt: issuedAt, expiresAt: expiresAt,
            dataAccessExpiresAt: dataAccessExpiresAt, isLongLived: isLongLived, granted: granted, declined: declined,
            expired: expired, invalidation: invalidation, pageID: pageID, targets: targets)
    }

    /// The hard failure of this token at `now` (invalidated or expired), ignoring data-access expiry.
    func failure(now: Int64) -> TokenInvalidation? {
        if let invalidation, invalidation != .dataAccessExpired, invalidation != .expired { return invalidation }
        if invalidation == .expired || (expiresAt > 0 && now >= expiresAt) { return .expired }
        return nil
    }

    /// Whether the app's access to the user's data has expired at `now`.
    func dataAccessExpired(now: Int64) -> Bool {
        kind != .app && dataAccessExpiresAt > 0 && now >= dataAccessExpiresAt
    }

    /// Removes `permission` from the granted and expired lists and records it as declined.
    mutating func revoke(_ permission: String) {
        granted.removeAll { $0 == permission }
        expired.removeAll { $0 == permission }
        targets[permission] = nil
        if !declined.contains(permission) { declined.append(permission) }
    }
}
