/// What Limited Login needs from Facebook (the port; `FBSessionsGraph.LimitedLoginClient` is the adapter): the key
/// set that signs `AuthenticationToken`s (`FBS_LIMITED_JWKS_URL`) and the uninstall endpoint that replaces
/// `DELETE /me/permissions` for such logins (`FBS_LIMITED_UNINSTALL_URL`). docs/limited-login.md has both.
///
/// Calls are bounded by `FBS_GRAPH_TIMEOUT`. Tokens never appear in a thrown error's description.
public protocol LimitedLoginAPI: Sendable {
    /// Fetches the key set.
    /// - Returns: the usable keys and the answer's `Cache-Control: max-age`, if it had one.
    /// - Throws: any error when the set could not be had (unreachable, a status other than 200, a body that is not
    ///   a key set): the cache keeps what it knew.
    func signingKeys() async throws -> SigningKeyFetch

    /// Uninstalls the person from the app: `POST` with `id_token` and `app_id`. Sent once per call, on a fresh
    /// connection (it must not be repeated silently).
    /// - Parameters:
    ///   - authenticationToken: the session's stored token.
    ///   - facebookAppID: the app's Facebook app id.
    /// - Throws: ``LimitedUninstallError``.
    func uninstall(authenticationToken: String, facebookAppID: String) async throws
}

/// A fetched key set.
public struct SigningKeyFetch: Sendable {
    /// The usable keys.
    public var keys: JSONWebKeySet
    /// Seconds the answer may be cached (`Cache-Control: max-age`), nil when it said nothing.
    public var maxAge: Double?

    /// Creates a value.
    public init(keys: JSONWebKeySet, maxAge: Double?) {
        self.keys = keys
        self.maxAge = maxAge
    }
}

/// Why an uninstall did not happen.
public enum LimitedUninstallError: Error, Sendable, Equatable {
    /// Facebook refused the token as invalid or expired: the uninstall can never succeed with it (the
    /// `revocation` answer is `unavailable`).
    case refused
    /// Facebook could not be asked or failed: a later attempt may work (`pending`).
    case unavailable
}
