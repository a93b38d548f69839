/// Identifies a user's grant to an app.
struct GrantKey: Hashable, Sendable {
    let appID: String
    let userID: String
}

/// What a user allowed an app, the emulator's memory between logins (declined permissions stay declined).
struct Grant: Sendable {
    var granted: [String]
    var declined: [String]
    var expired: [String]
}

/// An authorization code from the dialog, exchanged once for a short-lived token.
struct AuthorizationCode: Sendable {
    let appID: String
    let userID: String
    let redirectURI: String
    let granted: [String]
    let declined: [String]
    let createdAt: Int64
    var used: Bool
    let metadata: [(String, String)]
    /// The token the code exchange gives: a user's, or (Login for Business) a system user's.
    var kind: TokenKind = .user
    /// The asset ids per permission a Login for Business configuration granted.
    var targets: [String: [String]] = [:]
}
