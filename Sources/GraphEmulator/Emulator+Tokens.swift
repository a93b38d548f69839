/// Issuing, inspecting and invalidating tokens; minting authorization codes.
extension Emulator {
    /// Issues a user access token, as if the user had logged in and granted `granted`.
    ///
    /// The user's grant to the app becomes exactly these lists (the dialog remembers declined permissions).
    /// - Parameters:
    ///   - appID: the app.
    ///   - userID: the user.
    ///   - longLived: a long-lived token (`debug_token` shows `issued_at`; default lifetime 60 days).
    ///   - expiresIn: seconds until expiry; 0 never expires; nil takes the short- or long-lived default.
    ///   - dataAccessExpiresIn: seconds until data access expires; nil is 90 days.
    ///   - granted: granted permissions (`public_profile` is always added).
    ///   - declined: declined permissions.
    ///   - expired: expired permissions.
    ///   - authType: `debug_token` `metadata.auth_type`.
    ///   - authNonce: `debug_token` `metadata.auth_nonce`.
    ///   - sso: `debug_token` `metadata.sso`, e.g. `ios`.
    ///   - assets: asset ids per granted permission (`granular_scopes` `target_ids`).
    /// - Returns: the token.
    /// - Throws: ``EmulatorError`` for an unknown app or user or a negative lifetime.
    public func issueToken(
        appID: String, userID: String, longLived: Bool = false, expiresIn: Int64? = nil,
        dataAccessExpiresIn: Int64? = nil, granted: [String] = ["public_profile"], declined: [String] = [],
        expired: [String] = [], authType: String? = nil, authNonce: String? = nil, sso: String? = nil,
        assets: [String: [String]] = [:]
    ) throws -> IssuedToken {
        let metadata = [("auth_type", authType), ("auth_nonce", authNonce), ("sso", sso)]
            .compactMap { name, value in value.map { (name, $0) } }
        return try state.withStore {
            try $0.issueUserToken(
                appID: appID, userID: userID, longLived: longLived, expiresIn: expiresIn,
                dataAccessExpiresIn: dataAccessExpiresIn, granted: granted, declined: declined, expired: expired,
                metadata: metadata, targets: assets)
        }.snapshot
    }

    /// Issues a Page access token of `userID` for the Page `pageID` (never expires; `debug_token` type `PAGE`).
    /// - Parameters:
    ///   - appID: the app.
    ///   - userID: the Page admin.
    ///   - pageID: the Page id (digits).
    ///   - pageName: the Page name `/me` returns.
    ///   - granted: granted permissions.
    /// - Returns: the token.
    /// - Throws: ``EmulatorError`` for an unknown app or user.
    public func issuePageToken(
        appID: String, userID: String, pageID: String, pageName: String = "Emulated Page",
        granted: [String] = ["pages_show_list"]
    ) throws -> IssuedToken {
        try state.withStore {
            try $0.issueUserToken(
                appID: appID, userID: userID, kind: .page, longLived: true, expiresIn: 0, dataAccessExpiresIn: nil,
                granted: granted, declined: [], expired: [], pageID: pageID, pageName: pageName)
        }.snapshot
    }

    /// The app access token `client_credentials` gives for `appID` (`APP_ID|…`; `APP_ID|APP_SECRET` works too).
    /// - Throws: ``EmulatorError`` for an unknown app.
    public func appToken(for appID: String) throws -> String {
        try state.withStore { try $0.appToken(for: appID) }.string
    }

    /// The current state of a token the emulator issued, or nil.
    public func token(_ accessToken: String) -> IssuedToken? {
        state.withStore { $0.tokens[accessToken]?.snapshot }
    }

    /// Invalidates one token: later calls get code 190 with the reason's subcode. `.expired` moves the expiry to
    /// now; `.dataAccessExpired` moves the data-access expiry to now (the token itself stays valid).
    /// - Throws: ``EmulatorError`` when the emulator did not issue the token.
    @discardableResult
    public func invalidateToken(_ accessToken: String, reason: TokenInvalidation) throws -> IssuedToken {
        try state.withStore { try $0.invalidate(accessToken, reason: reason) }.snapshot
    }

    /// Invalidates every token of a user, for one app or all of them (e.g. a password change, 460).
    /// - Returns: how many tokens changed.
    @discardableResult
    public func invalidateTokens(userID: String, appID: String? = nil, reason: TokenInvalidation) -> Int {
        state.withStore { $0.invalidateAll(userID: userID, appID: appID, reason: reason) }
    }

    /// Mints an authorization code as the dialog would after the user approved, for the code exchange.
    /// - Parameters:
    ///   - appID: the app.
    ///   - userID: the user.
    ///   - redirectURI: the redirect URI the exchange must repeat exactly.
    ///   - granted: granted permissions.
    ///   - declined: declined permissions.
    /// - Returns: the code (single use, valid for ``Configuration/codeLifetime`` seconds).
    /// - Throws: ``EmulatorError`` for an unknown app or user.
    public func authorizationCode(
        appID: String, userID: String, redirectURI: String, granted: [String] = ["public_profile"],
        declined: [String] = []
    ) throws -> String {
        let grant = EmulatorStore.normalized(granted: granted, declined: declined, expired: [])
        return try state.withStore {
            try $0.issueCode(appID: appID, userID: userID, redirectURI: redirectURI, grant: grant, metadata: [])
        }
    }
}
