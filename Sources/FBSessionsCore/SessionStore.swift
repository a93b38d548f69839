import Foundation
import Synchronization

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

    /// The session as the exact cache holds it, shared rather than copied, with the body last rendered from it and
    /// kept there (``keepRendered(_:from:)``), when `pass` is that cache's (nil: not held, or another cache's pass;
    /// read with ``session(id:appID:)``). `hint` is where ``sessionHint(id:)`` found it before the fence. No I/O.
    /// Default: nil.
    func cachedSession(id: String, appID: String, pass: FencePass, hint: CacheHint) -> CachedSession?

    /// Keeps a body rendered from a session read with ``cachedSession(id:appID:pass:hint:)`` beside it, while the
    /// cache still holds that very entry. No I/O. Default: nothing is kept.
    func keepRendered(_ rendered: RenderedBody, from held: HeldSession)

    /// The owner's list as the exact cache holds it, like ``cachedSession(id:appID:pass:hint:)``, with the hint of
    /// ``sessionsHint(owner:appID:)``. Default: nil.
    func cachedSessions(owner: String, appID: String, pass: FencePass, hint: CacheHint) -> [Session]?

    /// Where the exact cache holds the session now, or nil when it does not: a hint, without a fence, that a
    /// request for it may be answered from the cache (nil: it would read the database, so it need not wait for a
    /// fence first), and where the read after the fence may look first. Default: nil.
    func sessionHint(id: String) -> CacheHint?

    /// Where the exact cache holds the owner's list now, like ``sessionHint(id:)``. Default: nil.
    func sessionsHint(owner: String, appID: String) -> CacheHint?

    /// A live session with its decrypted token, or nil when unknown; throws ``SessionError/closed`` when closed.
    func sessionWithToken(id: String, appID: String) async throws -> (session: Session, token: String)?

    /// Closes a session (erasing token and profile) with its event. Idempotent: an already closed session is
    /// returned as it is, with `closedNow == false`. With `keepRevocation`, the token is first kept for a later
    /// revocation at Facebook.
    func close(id: String, appID: String, reason: ClosedReason, keepRevocation: Bool) async throws
        -> (session: Session, closedNow: Bool)?

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

    /// Records a validation's result, releases the claim, and writes the events it implies.
    func finishValidation(id: String, appID: String, result: ValidationResult) async throws -> Session?
}

extension SessionStore {
    public func cachedSession(id: String, appID: String, pass: FencePass, hint: CacheHint) -> CachedSession? { nil }

    public func keepRendered(_ rendered: RenderedBody, from held: HeldSession) {}

    public func cachedSessions(owner: String, appID: String, pass: FencePass, hint: CacheHint) -> [Session]? { nil }

    public func sessionHint(id: String) -> CacheHint? { nil }

    public func sessionsHint(owner: String, appID: String) -> CacheHint? { nil }
}

/// A session as the exact cache holds it, and the body last rendered from it, if any.
public struct CachedSession: Sendable {
    /// The session, shared.
    public let held: HeldSession
    /// The body kept beside it (``SessionStore/keepRendered(_:from:)``).
    public let rendered: RenderedBody?

    public init(held: HeldSession, rendered: RenderedBody?) {
        self.held = held
        self.rendered = rendered
    }
}

/// A session held by the exact cache, shared by every read of it rather than copied: a copy of a `Session` retains
/// each of its strings and arrays, and over thousands of cached sessions each of those touches memory the processor
/// has not cached.
///
/// It is also the cache's hint for a request (``CacheHint``): the cache withdraws it (``withdraw()``) whenever it
/// stops holding it as the entry for its session, whether announced, evicted, replaced or emptied, always before
/// the fence that follows can pass. So a read after a fence that finds it not withdrawn finds the very entry a search
/// of the cache would find, and needs neither the cache's lock nor a search.
public final class HeldSession: Sendable {
    /// The session as stored.
    public let session: Session
    /// The body last rendered from this session (``SessionStore/keepRendered(_:from:)``); a body kept later comes in
    /// a new `HeldSession`, which replaces this one in the cache.
    public let rendered: RenderedBody?
    private let withdrawn = Atomic<Bool>(false)

    public init(_ session: Session, rendered: RenderedBody? = nil) {
        self.session = session
        self.rendered = rendered
    }

    /// Whether the cache that held this entry has stopped holding it. Once true, it stays true.
    public var isWithdrawn: Bool { withdrawn.load(ordering: .acquiring) }

    /// Called by the cache that holds the entry, under its lock, when it stops holding it.
    public func withdraw() {
        withdrawn.store(true, ordering: .releasing)
    }
}

/// A response body rendered from a stored session as shown at some moment, kept beside it in the exact cache so that
/// an unchanged session is not rendered again. How a session is shown differs from how it is stored only in its
/// state (``SessionService``'s presentation), so the state it was shown in is all a kept body needs beside the
/// stored session it was rendered from: it is reused only for that very session shown in that state, and so never
/// says anything the session does not.
public struct RenderedBody: Sendable {
    /// The state the session was shown in.
    public let shownState: SessionState
    /// The body rendered.
    public let body: [UInt8]

    public init(shownState: SessionState, body: [UInt8]) {
        self.shownState = shownState
        self.body = body
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
        granularScopes: [GranularScope] = [], tokenIssuedAt: Date? = nil, deviceKeyThumbprint: String? = nil
    ) {
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
    /// Graph confirmed the token; store what changed (a new token when it was re-extended).
    case valid(
        tokenExpiresAt: Date?, dataAccessExpiresAt: Date?, permissions: GraphPermissions?, profile: Profile?,
        extendedToken: String?, action: ActionRequired?)
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
