/// What ``Emulator/mintAuthenticationToken(_:)`` makes: a Limited Login `AuthenticationToken` for a user of an app
/// and a nonce, shaped like Facebook's, plus the knobs tests use to make tokens the service must refuse.
public struct AuthenticationTokenRequest: Sendable {
    /// Which key signs.
    public enum Signer: String, Sendable {
        /// The current signing key of the key set.
        case current
        /// A key that is in no key set (the token names the current `kid`, so the signature is what fails).
        case unlisted
    }

    /// The `kid` the header names.
    public enum KeyIDChoice: Sendable, Equatable {
        /// The signing key's.
        case signer
        /// None: the header has no `kid`.
        case omitted
        /// This one.
        case value(String)
    }

    /// The app (`aud`, unless ``audience`` says otherwise).
    public var appID: String
    /// The user (`sub`; the profile claims come from the user).
    public var userID: String
    /// The `nonce` claim.
    public var nonce: String
    /// The permissions granted: `email` adds the `email` claim (when the user has one), `user_link` `user_link`.
    public var granted: [String] = ["public_profile", "email"]
    /// Seconds from `iat` to `exp`. Default 3600 (Facebook's tokens live an hour).
    public var expiresIn: Int64 = 3600
    /// `iss`. Default `https://www.facebook.com`.
    public var issuer = "https://www.facebook.com"
    /// `aud`, when not the app id.
    public var audience: String?
    /// `iat` in Unix seconds, when not the emulator's clock.
    public var issuedAt: Int64?
    /// Seconds the `picture` URL works. Default: the emulator's picture URL lifetime.
    public var pictureExpiresIn: Int64?
    /// Claims to leave out (`sub`, `jti`, `nonce`, `picture`, ...).
    public var omittedClaims: [String] = []
    /// The header's `kid`.
    public var keyID: KeyIDChoice = .signer
    /// The header's `alg` (the signature is RS256 whatever this says).
    public var algorithm = "RS256"
    /// Which key signs.
    public var signer: Signer = .current
    /// A payload to sign instead of the claims (any text, even one that is not JSON).
    public var rawPayload: String?
    /// `cnf.jkt`: the thumbprint of the device key the token is bound to (iOS SDK 18.1); nil for no `cnf` claim.
    public var deviceKeyThumbprint: String?

    /// A token for `userID` of `appID` carrying `nonce`, with every other field at its default.
    public init(appID: String, userID: String, nonce: String) {
        self.appID = appID
        self.userID = userID
        self.nonce = nonce
    }
}

/// A minted `AuthenticationToken`.
public struct MintedAuthenticationToken: Sendable {
    /// The compact JWS, as the SDK hands it to the app.
    public let token: String
    /// The `kid` of the key that signed it.
    public let keyID: String
    /// The claims, as JSON text (empty when a raw payload was signed).
    public let claims: String
    /// `exp`, Unix seconds.
    public let expiresAt: Int64
    /// `iat`, Unix seconds.
    public let issuedAt: Int64
}

/// What ``Emulator/refreshAuthenticationToken(_:)`` (and `POST /limited_login/refresh/`) takes: the current token
/// as the SDK's direct refresh sends it, and which device key the new token is bound to.
public struct LimitedRefreshRequest: Sendable {
    /// The new token's `cnf.jkt`.
    public enum Binding: Sendable, Equatable {
        /// The hint's (none if it had none): the SDK still holds the same device key.
        case keep
        /// Another key's thumbprint: the SDK made a new device key.
        case rebind(String)
        /// No `cnf` claim.
        case unbound
    }

    /// `id_token_hint`: the token to refresh.
    public var hint: String
    /// `app_id`.
    public var appID: String
    /// The new token's binding. Default: the hint's.
    public var binding: Binding = .keep

    /// A refresh of `hint` for `appID`, keeping the hint's binding.
    public init(hint: String, appID: String) {
        self.hint = hint
        self.appID = appID
    }
}
