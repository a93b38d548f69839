import Foundation

/// The `auth_type` of a login dialog (docs/facebook-graph.md §4.1 and §9.5).
public enum AuthType: String, Sendable, CaseIterable, Codable {
    /// Asks again for permissions the person declined earlier (the SDK's default for login buttons).
    case rerequest
    /// Renews 90-day data access; a session's `action_required: reauthorize` asks for it.
    case reauthorize
    /// Asks the person to log in again unconditionally; Facebook shows its account chooser, so an owner can add
    /// another account.
    case reauthenticate
}

/// What a login URL's state is bound to, before it is stored.
public struct LoginStateDraft: Sendable, Equatable {
    /// The app whose key asked for the URL.
    public var appID: String
    /// The owner the login is for; the code login must name the same owner.
    public var owner: String
    /// The registered redirect URI the dialog returns to; the code exchange repeats it exactly.
    public var redirectURI: String
    /// The slot asked for, if any.
    public var slot: Int?
    /// The permissions asked for.
    public var scopes: [String]
    /// The dialog's auth type.
    public var authType: AuthType?
    /// The `auth_nonce` sent with `reauthenticate`; Facebook echoes it in `debug_token` metadata.
    public var authNonce: String?
    /// The Facebook Login for Business configuration the dialog was opened with, if any (then ``scopes`` is
    /// empty). Kept with the state as a record of what the login asked for.
    public var configID: String?

    /// Creates a draft.
    public init(
        appID: String, owner: String, redirectURI: String, slot: Int?, scopes: [String], authType: AuthType?,
        authNonce: String?, configID: String? = nil
    ) {
        self.appID = appID
        self.owner = owner
        self.redirectURI = redirectURI
        self.slot = slot
        self.scopes = scopes
        self.authType = authType
        self.authNonce = authNonce
        self.configID = configID
    }
}

/// A stored login-URL state. The state text itself is never stored, only its SHA-256, so reading the database
/// yields no usable state.
public struct LoginState: Sendable, Equatable {
    /// What the state is bound to.
    public var draft: LoginStateDraft
    /// When it was made (database clock).
    public var createdAt: Date
    /// When it stops working (database clock).
    public var expiresAt: Date

    /// Creates a value.
    public init(draft: LoginStateDraft, createdAt: Date, expiresAt: Date) {
        self.draft = draft
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

/// The outcome of trying to use a state.
public enum StateConsumption: Sendable, Equatable {
    /// The state was unused, unexpired, this app's and this owner's; it is now used.
    case consumed(LoginState)
    /// No such state for this app (never issued, another app's, or long gone).
    case unknown
    /// Already used once.
    case used
    /// Expired unused.
    case expired
    /// Issued for another owner of this app; left unused.
    case otherOwner
}

/// Storage for login-URL states (the port; `FBSessionsStorage.PostgresLoginStateStore` is the adapter). Times
/// come from the store's clock, so every instance agrees on expiry.
public protocol LoginStateStore: Sendable {
    /// Stores a new state under the SHA-256 of its text, valid for `lifetime` seconds.
    /// - Returns: the stored state with its times.
    func saveState(hash: [UInt8], draft: LoginStateDraft, lifetime: Double) async throws -> LoginState

    /// Uses a state at most once: atomically marks it used when it is this app's and this owner's, unused and
    /// unexpired; otherwise says why not, changing nothing.
    func consumeState(hash: [UInt8], appID: String, owner: String) async throws -> StateConsumption

    /// Makes a state consumed by the same request usable again, when the code exchange failed in a way that may
    /// succeed on a retry (Graph unreachable or throttling).
    func releaseState(hash: [UInt8], appID: String) async throws
}
