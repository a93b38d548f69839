/// The endpoint families the emulator counts, delays and fails separately. The raw values are the names the
/// control API uses.
public enum GraphEndpoint: String, Sendable, CaseIterable, Hashable {
    /// `GET /me`.
    case me
    /// `GET /{user-id}`.
    case user
    /// `GET /debug_token`.
    case debugToken = "debug_token"
    /// `GET|POST /oauth/access_token`.
    case oauthAccessToken = "oauth_access_token"
    /// `GET|DELETE /{id}/permissions[/{permission}]`.
    case permissions
    /// `GET /{id}/picture`.
    case picture
    /// The picture bytes at the emulator's CDN stand-in (`/__cdn/...`).
    case cdn
    /// The login dialog `/vNN.N/dialog/oauth`.
    case dialog
    /// Limited Login's discovery document, `/.well-known/openid-configuration/`.
    case openIDConfiguration = "openid_configuration"
    /// Limited Login's key set, `/.well-known/oauth/openid/jwks/`.
    case jwks
    /// Limited Login's uninstall endpoint, `POST /platform/uninstall/`.
    case uninstall
    /// Limited Login's direct refresh (iOS SDK 18.1), `POST /limited_login/refresh/`.
    case limitedRefresh = "limited_refresh"
    /// Any other Graph path (unknown nodes and edges).
    case other
}
