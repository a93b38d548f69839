import Foundation

/// Storage for sessions, owners and their events. Every change and its events are one transaction: no change
/// is ever without its event, nor an event without its change. Every call is scoped by app.
public protocol SessionStore: Sendable {
    /// Stores a verified login: the slot rule of the contract, replacement, activation and events; with
    /// ``LoginRecord/nonce``, uses the nonce up in the same transaction.
    /// - Throws: ``SessionError/slotsFull`` when every slot holds another Facebook user; ``LoginNonceError`` when
    ///   the record's nonce cannot be used.
    func storeLogin(_ login: LoginRecord) async throws -> StoredLogin

    /// Replaces a live limited session's token with a verified, refreshed one, with one conditional write: only
    /// while the session is open, of kind `limited`, of the token's `sub`, and holding a token issued before this
    /// one. Writes the profile and token from the claims, `token.changed` (`user_changed: false`,
    /// `binding_changed`) and, when the profile changed, `profile.changed`, in the same transaction; a changed
    /// picture URL drops the picture cached from the old one.
    /// - Returns: the session as stored now.
    /// - Throws: ``SessionError/notFound``, ``SessionError/closed``, ``SessionError/notLimited``, or
    ///   ``AuthenticationTokenError/wrongSubject`` / ``AuthenticationTokenError/notNewer`` (from
    ///   ``RefreshRecord/refusal(storedUserID:)``); nothing is written then.
    func storeRefresh(_ refresh: RefreshRecord) async throws -> Session

    /// One session (live or closed), or nil when unknown to this app.
    func session(id: String, appID: String) async throws -> Session?

    /// The owner's live sessions by slot, the active one marked.
    func sessions(owner: String, appID: String) async throws -> [Session]

    /// A live session with its decrypted token, or nil when unknown; throws ``SessionError/closed`` when closed.
    func sessionWithToken(id: String, appID: String) async throws -> (session: Session, token: String)?

    /// ``sessionWithToken(id:appID:)`` that, with a `stamp`, also writes `token.read` to the audit log in the same
    /// statement, when the session is live, of kind `standard` and holds a token. Default: without an entry (a
    /// store with no audit log).
    func sessionWithToken(id: String, appID: String, readBy stamp: AuditStamp?) async throws
        -> (session: Session, token: String)?

    /// Closes a session (erasing token and profile) with its event. Idempotent: an already closed session is
    /// returned as it is, with `closedNow == false`. With `keepRevocation`, the token is first kept for a later
    /// revocation at Facebook.
    func close(id: String, appID: String, reason: ClosedReason, keepRevocation: Bool) async throws
        -> (session: Session, closedNow: Bool)?

    /// ``close(id:appID:reason:keepRevocation:)`` that, with a `stamp` and when it closes the session now, also
    /// writes `session.revoked` to the audit log in the closing transaction. Default: without an entry.
    func close(id: String, appID: String, reason: ClosedReason, keepRevocation: Bool, revokedBy stamp: AuditStamp?)
        async throws -> (session: Session, closedNow: Bool)?

    /// Forgets a pending revocation (and the token it holds) once Facebook has answered it; with `confirmed`
    /// (Facebook took it, or said the grant is gone already), the session remembers that its revocation is done.
    func completeRevocation(sessionID: String, appID: String, confirmed: Bool) async throws

    /// What became of the revocation of a closed session: `done` once Facebook confirmed one, `pending` while one
    /// is owed, else `unavailable`.
    func revocation(sessionID: String, appID: String) async throws -> SessionService.Revocation

    /// Closes every live session of an owner.
    func closeAll(owner: String, appID: String, reason: ClosedReason) async throws -> [Session]

    /// Makes a live session the owner's active one (event `session.activated` when it changes).
    /// - Throws: ``SessionError/notFound`` or ``SessionError/closed``.
    func activate(sessionID: String, owner: String, appID: String) async throws -> Session

    /// Claims the right to validate a session whose last validation is older than `staleAfter` seconds, for
    /// `lease` seconds, across all instances. Returns the session and, when claimed, its token.
    func claimValidation(id: String, appID: String, staleAfter: Double, lease: Double) async throws
        -> ValidationClaim

    /// Records a validation's result, releases the claim, and writes the events it implies
    /// (`session.action_required` when `action_required` becomes another non-null value).
    func finishValidation(id: String, appID: String, result: ValidationResult) async throws -> Session?
}

extension SessionStore {
    public func sessionWithToken(id: String, appID: String, readBy stamp: AuditStamp?) async throws
        -> (session: Session, token: String)?
    {
        try await sessionWithToken(id: id, appID: appID)
    }

    public func close(
        id: String, appID: String, reason: ClosedReason, keepRevocation: Bool, revokedBy stamp: AuditStamp?
    ) async throws -> (session: Session, closedNow: Bool)? {
        try await close(id: id, appID: appID, reason: reason, keepRevocation: keepRevocation)
    }
}

/// What a verified login stores.
public struct LoginRecord: Sendable {
    public var appID: String
    public var owner: String
    public var requestedSlot: Int?
    public var activate: Bool
    public var maxSlots: Int
    public var facebookUserID: String
    public var token: String
    public var tokenExpiresAt: Date?
    public var dataAccessExpiresAt: Date?
    public var permissions: GraphPermissions
    /// `debug_token`'s `granular_scopes` (empty for Limited Login, which has no `debug_token`).
    public var granularScopes: [GranularScope]
    public var profile: Profile
    public var action: ActionRequired?
    /// Why `action` is needed (the `reason` of `session.action_required`); nil: ``ActionReason/usual(for:)``.
    public var actionReason: ActionReason?
    /// How the person logged in; `limited` stores the `AuthenticationToken` as the session's token.
    public var kind: LoginKind
    /// The Limited Login nonce to use up in the same transaction: the login fails with ``LoginNonceError`` (and
    /// stores nothing) unless it is unused, unexpired, this app's and this owner's. Its slot applies when
    /// `requestedSlot` is nil.
    public var nonce: NonceUse?
    /// A Limited Login token's `iat`: what a later refresh must beat (nil for a standard login).
    public var tokenIssuedAt: Date?
    /// A Limited Login token's `cnf.jkt`, if it has one.
    public var deviceKeyThumbprint: String?

    /// Creates a record.
    public init(
        appID: String, owner: String, requestedSlot: Int?, activate: Bool, maxSlots: Int, facebookUserID: String,
        token: String, tokenExpiresAt: Date?, dataAccessExpiresAt: Date?, permissions: GraphPermissions,
        profile: Profile, action: ActionRequired?, kind: LoginKind = .standard, nonce: NonceUse? = nil,
        granularScopes: [GranularScope] = [], tokenIssuedAt: Date? = nil, deviceKeyThumbprint: String? = nil,
        actionReason: ActionReason? = nil
    ) {
        self.actionReason = actionReason
        self.appID = appID
        self.owner = owner
        self.requestedSlot = requestedSlot
        self.activate = activate
        self.maxSlots = maxSlots
        self.facebookUserID = facebookUserID
        self.token = token
        self.tokenExpiresAt = tokenExpiresAt
        self.dataAccessExpiresAt = dataAccessExpiresAt
        self.permissions = permissions
        self.granularScopes = granularScopes
        self.profile = profile
        self.action = action
        self.kind = kind
        self.nonce = nonce
        self.tokenIssuedAt = tokenIssuedAt
        self.deviceKeyThumbprint = deviceKeyThumbprint
    }
}

/// The result of storing a login.
public struct StoredLogin: Sendable {
    /// The session now holding the login.
    public var session: Session
    /// True for a new session (201), false when an existing one was updated (200).
    public var created: Bool
    /// The session this one replaced in its slot, if any.
    public var replaced: Session?

    /// Creates a result.
    public init(session: Session, created: Bool, replaced: Session?) {
        self.session = session
        self.created = created
        self.replaced = replaced
    }
}

/// The answer to a validation claim.
public enum ValidationClaim: Sendable {
    /// No such session for this app.
    case notFound
    /// Closed, or validated within the freshness window: nothing to do.
    case settled(Session)
    /// Another request (maybe on another instance) is validating it right now.
    case busy(Session)
    /// This caller validates it; the claim lasts until `finishValidation` or the lease ends.
    case claimed(Session, token: String)
}

/// What a validation found.
public enum ValidationResult: Sendable {
    /// Graph confirmed the token; store what changed (a new token when it was re-extended). `actionReason` says
    /// why `action` is needed (nil: ``ActionReason/usual(for:)``).
    case valid(
        tokenExpiresAt: Date?, dataAccessExpiresAt: Date?, permissions: GraphPermissions?, profile: Profile?,
        extendedToken: String?, action: ActionRequired?, actionReason: ActionReason?)
    /// Data access expired (190/493): keep the session, ask for reauthorization.
    case dataAccessExpired
    /// Graph said the token is dead: close with this reason.
    case invalid(ClosedReason)
    /// Graph could not be asked: release the claim, change nothing.
    case deferred
}

/// Session errors the API maps to statuses.
public enum SessionError: Error, Equatable, Sendable {
    /// Every slot of the owner holds another Facebook user.
    case slotsFull(Int)
    /// Unknown, or another app's.
    case notFound
    /// The session is closed.
    case closed
    /// The session is a Limited Login one: it holds no token Graph accepts (`GET …/token` is 409).
    case noGraphToken
    /// The session is a standard one: it has no Limited Login token to refresh (409 `not_limited`).
    case notLimited
}
