/// The emulator as Limited Login's Facebook: minting `AuthenticationToken`s, rotating the signing key, the key
/// set's `Cache-Control`, and the uninstalls received (README.md, "Limited Login").
extension Emulator {
    /// The key set's URL (what `FBS_LIMITED_JWKS_URL` points at).
    public var limitedJWKSURL: String { baseURL + "/.well-known/oauth/openid/jwks/" }
    /// The uninstall endpoint's URL (what `FBS_LIMITED_UNINSTALL_URL` points at).
    public var limitedUninstallURL: String { baseURL + "/platform/uninstall/" }
    /// The discovery document's URL.
    public var limitedDiscoveryURL: String { baseURL + "/.well-known/openid-configuration/" }

    /// Mints a signed token, as Limited Login would hand one to the app after the person logged in.
    /// - Parameter request: the app, user, nonce and any knobs.
    /// - Returns: the token.
    /// - Throws: ``EmulatorError`` for an unknown app or user.
    public func mintAuthenticationToken(_ request: AuthenticationTokenRequest) throws -> MintedAuthenticationToken {
        let base = baseURL
        return try state.withStore { try $0.mintAuthenticationToken(request, baseURL: base) }
    }

    /// Mints a token for `userID` of `appID` carrying `nonce`, every knob at its default.
    public func mintAuthenticationToken(appID: String, userID: String, nonce: String) throws
        -> MintedAuthenticationToken
    {
        try mintAuthenticationToken(AuthenticationTokenRequest(appID: appID, userID: userID, nonce: nonce))
    }

    /// Refreshes a token as the SDK's direct refresh (`POST /limited_login/refresh/`) would get it refreshed: a new
    /// token for the same person, with a later `iat`, a new `exp`, the SDK's own nonce (a UUID), and the hint's
    /// `cnf.jkt` unless the request binds it otherwise.
    /// - Throws: ``EmulatorError`` naming the refusal (the hint is not this emulator's, another app's, or expired).
    public func refreshAuthenticationToken(_ request: LimitedRefreshRequest) throws -> MintedAuthenticationToken {
        let base = baseURL
        let result = state.withStore { $0.refreshAuthenticationToken(request, baseURL: base) }
        switch result {
        case .success(let minted): return minted
        case .failure(let error): throw EmulatorError("the refresh was refused: \(error.message)")
        }
    }

    /// Tokens the direct refresh handed out so far.
    public var limitedRefreshCount: Int {
        state.withStore { $0.limited.refreshed }
    }

    /// Makes a new signing key, first in the key set; without `keepPrevious` the old keys leave the set (tokens
    /// they signed stop verifying wherever the new set is fetched).
    /// - Returns: the new key's `kid`.
    @discardableResult
    public func rotateSigningKey(keepPrevious: Bool = false) throws -> String {
        try state.withStore { try $0.limited.rotate(keepPrevious: keepPrevious) }.keyID
    }

    /// The `kid`s in the key set, the signing one first (a key is made if there is none yet).
    public var signingKeyIDs: [String] {
        state.withStore { store in
            if store.limited.keys.isEmpty { _ = try? store.limited.signingKey() }
            return store.limited.keys.map(\.keyID)
        }
    }

    /// The key set's `Cache-Control: public, max-age=N`; nil sends no `Cache-Control`. Default 3600.
    public var keySetMaxAge: Int? {
        get { state.withStore { $0.limited.maxAge } }
        set { state.withStore { $0.limited.maxAge = newValue } }
    }

    /// Every uninstall the endpoint accepted, oldest first.
    public var limitedUninstalls: [LimitedUninstall] {
        state.withStore { $0.limited.uninstalls }
    }

    /// Mints a token of the demo app for a demo user, seeding the demo first if needed.
    /// - Parameters:
    ///   - user: `alice`, `bob`, or a user id.
    ///   - nonce: the nonce (from `POST /v1/login-nonces`).
    ///   - deviceKeyThumbprint: the `cnf.jkt` to bind the token to, if any.
    /// - Throws: ``EmulatorError`` for an unknown user.
    public func mintDemoAuthenticationToken(user: String, nonce: String, deviceKeyThumbprint: String? = nil) throws
        -> MintedAuthenticationToken
    {
        if state.withStore({ $0.apps[Self.demoAppID] == nil }) { seedDemo() }
        let userID: String
        switch user.lowercased() {
        case "alice": userID = Self.demoAliceID
        case "bob": userID = Self.demoBobID
        default: userID = user
        }
        var request = AuthenticationTokenRequest(appID: Self.demoAppID, userID: userID, nonce: nonce)
        request.deviceKeyThumbprint = deviceKeyThumbprint
        return try mintAuthenticationToken(request)
    }
}
