/// What an API key may do.
public enum Scope: String, Sendable, CaseIterable, Codable {
    /// Sessions, owners, login URLs and pictures.
    case sessions
    /// The decrypted token endpoint.
    case tokensRead = "tokens:read"
    /// The change feed.
    case events
    /// The audit log (`GET /v1/audit`); never among the defaults.
    case audit

    /// The scopes of a key made without `--scope`.
    public static let defaults: [Scope] = [.sessions, .events]
}
