import Foundation

/// What a verified Limited Login refresh stores (``SessionStore/storeRefresh(_:)``): the new token and what its
/// claims say, for one session of one app.
public struct RefreshRecord: Sendable {
    /// The app.
    public var appID: String
    /// The session whose token is replaced.
    public var sessionID: String
    /// The refreshed token, as the SDK handed it to the app.
    public var token: String
    /// `sub`: must be the session's Facebook user.
    public var facebookUserID: String
    /// `iat`: must be later than the stored token's.
    public var issuedAt: Date
    /// `exp`: the session's new `token.expires_at`.
    public var expiresAt: Date
    /// `cnf.jkt`, if the token is bound to a device key.
    public var deviceKeyThumbprint: String?
    /// The permissions the claims show.
    public var permissions: GraphPermissions
    /// The profile the claims describe.
    public var profile: Profile

    /// The record of a token whose signature and claims checked.
    /// - Parameters:
    ///   - claims: the refreshed token's claims.
    ///   - token: the token itself.
    ///   - sessionID: the session it refreshes.
    ///   - appID: the caller's app.
    public init(claims: AuthenticationTokenClaims, token: String, sessionID: String, appID: String) {
        self.appID = appID
        self.sessionID = sessionID
        self.token = token
        facebookUserID = claims.subject
        issuedAt = claims.issuedAt
        expiresAt = claims.expiresAt
        deviceKeyThumbprint = claims.deviceKeyThumbprint
        permissions = claims.permissions
        profile = claims.profile
    }

    /// Why a live limited session whose conditional write matched no row refused this token: `wrong_subject` when
    /// `sub` is another person's, else `not_newer` (the stored token's `iat` is not earlier: a replay, an older
    /// token, or a racing refresh with the same token that committed first). The store decides with the write and
    /// asks this only to name the refusal: it never allows a write.
    /// - Parameter storedUserID: the session's `facebook_user_id`.
    public func refusal(storedUserID: String) -> AuthenticationTokenError {
        facebookUserID == storedUserID ? .notNewer : .wrongSubject
    }

    /// Whether the stored token's device-key binding and this token's differ in a way worth telling: the stored
    /// token was bound to a key and this one names another key, or none. A stored token with no known binding (one
    /// stored before bindings were recorded, or one that had no `cnf`) changes nothing by gaining one.
    public func changesBinding(from stored: String?) -> Bool {
        guard let stored else { return false }
        return deviceKeyThumbprint != stored
    }
}
