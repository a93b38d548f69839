import Crypto
import Foundation

/// Facebook Limited Login, server side: nonces for the app to pass to the SDK, and logins with the
/// `AuthenticationToken` (an OIDC ID token signed with RS256) the SDK returns instead of a Graph access token
/// (docs/limited-login.md).
///
/// A token is verified in this order, and the first failure is the answer: size and compact-JWS shape, `alg`
/// exactly `RS256`, a `kid` in the key set (``SigningKeyCache``), the signature, the claims' presence and types,
/// `iss`, `aud`, `exp`, `iat` (60 s leeway each way). Only then is the nonce looked at, in the transaction that
/// stores the session: it must be this service's, this owner's and this app's, unused and unexpired, and it is
/// used up there, so two logins racing with one nonce (on any number of instances) cannot both win. A refused
/// token changes nothing and leaves its nonce usable.
///
/// A token the iOS SDK (18.1 and later) refreshed by itself replaces a limited session's through
/// ``refresh(sessionID:app:authenticationToken:)`` (`LimitedLogin+Refresh.swift`): every check above but the nonce,
/// then `sub` and a later `iat`, decided by one conditional write.
public struct LimitedLogin: Sendable {
    /// Lifetimes and leeway.
    public struct Configuration: Sendable {
        /// Seconds a nonce stays usable. Default 600 (10 minutes, the contract's value).
        public var nonceLifetime: Double = 600
        /// Seconds of clock difference forgiven on `exp` and `iat`. Default 60.
        public var leeway: Double = 60

        /// The defaults.
        public init() {}
    }

    let sessions: SessionService
    let nonces: any LoginNonceStore
    let keys: SigningKeyCache
    let configuration: Configuration
    let clock: @Sendable () -> Date

    /// Creates the flow.
    /// - Parameters:
    ///   - sessions: the session service (its store and slot policy).
    ///   - nonces: where nonces are stored.
    ///   - keys: the shared signing-key cache.
    ///   - configuration: lifetimes and leeway.
    ///   - clock: the current time, for `exp` and `iat` (tests move it).
    public init(
        sessions: SessionService, nonces: any LoginNonceStore, keys: SigningKeyCache,
        configuration: Configuration = Configuration(), clock: @escaping @Sendable () -> Date = Date.init
    ) {
        self.sessions = sessions
        self.nonces = nonces
        self.keys = keys
        self.configuration = configuration
        self.clock = clock
    }

    /// Makes and stores a nonce for an owner.
    /// - Returns: the nonce's text (shown once; only its hash is kept) and its times.
    public func makeNonce(app: App, owner: String, slot: Int?) async throws -> (text: String, nonce: LoginNonce) {
        let text = LoginNonce.newText()
        let stored = try await nonces.saveNonce(
            hash: LoginNonce.hash(text), appID: app.id, owner: owner, slot: slot, lifetime: configuration.nonceLifetime)
        return (text, stored)
    }

    /// Verifies a token for an app, without looking up its nonce: every check of the list above but the nonce's.
    /// - Parameters:
    ///   - token: the token.
    ///   - app: the caller's app (`aud` must be its Facebook app id).
    ///   - nonceRule: ``AuthenticationTokenClaims/NonceRule/required`` for a login (the claim must be there; the
    ///     caller then checks it is this service's), `notChecked` for a refresh (the SDK made it).
    /// - Returns: the claims.
    /// - Throws: ``AuthenticationTokenError`` for a refused token; ``SigningKeyError`` when the key set cannot be
    ///   had and no key for the token's `kid` is cached.
    public func verify(
        _ token: String, app: App, nonceRule: AuthenticationTokenClaims.NonceRule = .required
    ) async throws -> AuthenticationTokenClaims {
        let jws = try CompactJWS(parsing: token)
        guard jws.algorithm == "RS256" else { throw AuthenticationTokenError.unsupportedAlgorithm }
        guard let kid = jws.keyID, !kid.isEmpty, let key = try await keys.key(for: kid) else {
            throw AuthenticationTokenError.unknownKey
        }
        guard key.isValidRS256Signature(jws.signature, for: jws.signingInput) else {
            throw AuthenticationTokenError.badSignature
        }
        let claims = try AuthenticationTokenClaims(verifiedPayload: jws.payload, nonceRule: nonceRule)
        try claims.check(audience: app.facebookAppID, now: clock(), leeway: configuration.leeway)
        return claims
    }

    /// Logs a person in with a Limited Login token: verifies it, then stores the session (the slot rule of any
    /// login: the owner's session of this Facebook user, else the requested slot, the nonce's, or the lowest free
    /// one) and uses up the nonce, in one transaction.
    /// - Parameters:
    ///   - app: the caller's app.
    ///   - owner: the owner; must be the nonce's.
    ///   - authenticationToken: the token from the SDK.
    ///   - slot: a slot; wins over the nonce's.
    ///   - activate: whether the session becomes the owner's active one.
    /// - Throws: ``AuthenticationTokenError``, ``SigningKeyError``, ``LoginNonceError``,
    ///   ``SessionError/slotsFull(_:)``.
    public func login(app: App, owner: String, authenticationToken: String, slot: Int?, activate: Bool) async throws
        -> StoredLogin
    {
        let claims = try await verify(authenticationToken, app: app)
        guard let nonce = claims.nonce, LoginNonce.isWellFormed(nonce) else { throw LoginNonceError.invalid }
        let record = LoginRecord(
            appID: app.id, owner: owner, requestedSlot: slot, activate: activate, maxSlots: sessions.policy.maxSlots,
            facebookUserID: claims.subject, token: authenticationToken, tokenExpiresAt: claims.expiresAt,
            dataAccessExpiresAt: nil, permissions: claims.permissions, profile: claims.profile, action: nil,
            kind: .limited, nonce: NonceUse(hash: LoginNonce.hash(nonce), owner: owner), tokenIssuedAt: claims.issuedAt,
            deviceKeyThumbprint: claims.deviceKeyThumbprint)
        var stored = try await sessions.store.storeLogin(record)
        stored.session = sessions.present(stored.session, now: Date())
        return stored
    }
}
