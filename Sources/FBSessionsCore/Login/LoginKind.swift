/// How a session's person logged in: the `login_kind` of every session.
public enum LoginKind: String, Sendable, Codable, CaseIterable {
    /// With a Graph access token (from the SDK, or the OAuth code flow): Graph can be called with it.
    case standard
    /// With Facebook Limited Login's `AuthenticationToken`, an OIDC ID token (docs/limited-login.md): Graph cannot
    /// be called with it, so the session is never validated against Graph and has no Graph token to reveal.
    case limited
}
