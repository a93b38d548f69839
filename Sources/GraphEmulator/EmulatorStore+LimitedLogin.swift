import Crypto
import Foundation

/// Minting Limited Login `AuthenticationToken`s and checking the ones the uninstall endpoint receives.
extension EmulatorStore {
    /// The profile size of the `picture` claim's URL (the SDK's `Profile.imageURL` default is square, 100).
    static let limitedPictureSize = PictureSize(width: 100, height: 100)

    /// Makes and signs a token. The profile claims come from the user: `given_name`, `middle_name`,
    /// `family_name` and `name` when set, `email` when granted and set, `picture` (a CDN URL that expires),
    /// `user_link` when granted and set.
    /// - Parameters:
    ///   - request: who, which nonce, and any knobs.
    ///   - baseURL: where the `picture` URL points (the emulator's CDN).
    /// - Throws: ``EmulatorError`` for an unknown app or user, or when no key could be made.
    mutating func mintAuthenticationToken(_ request: AuthenticationTokenRequest, baseURL: String) throws
        -> MintedAuthenticationToken
    {
        _ = try app(request.appID)
        let user = try self.user(request.userID)
        let signing = try limited.signingKey()
        let signer = request.signer == .unlisted ? try limited.unlistedKey() : signing
        let issuedAt = request.issuedAt ?? now
        let expiresAt = issuedAt + request.expiresIn
        let pictureExpiry = now + (request.pictureExpiresIn ?? configuration.pictureURLLifetime)
        let picture = PictureCDN.url(
            base: baseURL, userID: user.hasPicture ? user.id : nil, size: Self.limitedPictureSize,
            expiry: pictureExpiry, key: cdnKey)
        var claims: [(String, JSONValue)] = [
            ("iss", .string(request.issuer)), ("aud", .string(request.audience ?? request.appID)),
            ("sub", .string(user.id)), ("iat", .int(issuedAt)), ("exp", .int(expiresAt)),
            ("jti", .string(RandomText.alphanumeric(4) + "." + Hex.encode(SecureRandom.bytes(32)))),
            ("nonce", .string(request.nonce)),
        ]
        if let jkt = request.deviceKeyThumbprint { claims.append(("cnf", .object([("jkt", .string(jkt))]))) }
        for (name, value) in [
            ("given_name", user.firstName), ("middle_name", user.middleName), ("family_name", user.lastName),
        ] {
            if let value, !value.isEmpty { claims.append((name, .string(value))) }
        }
        if !user.displayName.isEmpty { claims.append(("name", .string(user.displayName))) }
        if request.granted.contains("email"), let email = user.email, !email.isEmpty {
            claims.append(("email", .string(email)))
        }
        claims.append(("picture", .string(picture)))
        if request.granted.contains("user_link"), let link = user.link, !link.isEmpty {
            claims.append(("user_link", .string(link)))
        }
        claims.removeAll { request.omittedClaims.contains($0.0) }
        let claimsText = JSONValue.object(claims).text
        var header: [(String, JSONValue)] = [("alg", .string(request.algorithm))]
        switch request.keyID {
        case .signer: header.append(("kid", .string(signing.keyID)))
        case .omitted: break
        case .value(let kid): header.append(("kid", .string(kid)))
        }
        header.append(("typ", .string("JWT")))
        let signingInput =
            Base64URL.encode(JSONValue.object(header).bytes) + "."
            + Base64URL.encode(Array((request.rawPayload ?? claimsText).utf8))
        let signature: [UInt8]
        do {
            signature = try signer.key.rs256Signature(for: Array(signingInput.utf8))
        } catch {
            throw EmulatorError("could not sign the token")
        }
        let token = signingInput + "." + Base64URL.encode(signature)
        limited.minted += 1
        SecretLedger.note("authentication token", token)
        return MintedAuthenticationToken(
            token: token, keyID: signer.keyID, claims: request.rawPayload == nil ? claimsText : "", expiresAt: expiresAt,
            issuedAt: issuedAt)
    }

    /// The SDK's direct refresh: a new token for the hint's person and app, as Facebook would answer it. `iat` is the
    /// emulator's clock, but always at least a second after the hint's (two refreshes within one second still give
    /// a later token), `exp` an hour later, `nonce` a fresh UUID (the SDK's own, never the backend's), a new `jti`,
    /// the profile claims as the user is now, `email` and `user_link` when the hint had them, and `cnf.jkt` as the
    /// request's binding says (the hint's by default).
    /// - Returns: the token, or the error the endpoint answers: the uninstall endpoint's for a hint that is not this
    ///   emulator's, another app's, or expired (``checkIDToken(_:appID:)``).
    mutating func refreshAuthenticationToken(_ request: LimitedRefreshRequest, baseURL: String)
        -> Result<MintedAuthenticationToken, GraphError>
    {
        let hint: [(String, JSONValue)]
        switch checkIDToken(request.hint, appID: request.appID) {
        case .refused(let error): return .failure(error)
        case .accepted(let claims): hint = claims
        }
        func claim(_ name: String) -> JSONValue? { hint.first { $0.0 == name }?.1 }
        guard let userID = claim("sub")?.stringValue else { return .failure(.invalidIDToken) }
        var mint = AuthenticationTokenRequest(appID: request.appID, userID: userID, nonce: UUID().uuidString)
        mint.issuedAt = max(now, (claim("iat")?.intValue ?? 0) + 1)
        mint.granted = ["public_profile"] + ["email", "user_link"].filter { claim($0) != nil }
        if let issuer = claim("iss")?.stringValue { mint.issuer = issuer }
        switch request.binding {
        case .keep:
            mint.deviceKeyThumbprint = claim("cnf")?.objectValue?.first { $0.0 == "jkt" }?.1.stringValue
        case .rebind(let jkt): mint.deviceKeyThumbprint = jkt
        case .unbound: mint.deviceKeyThumbprint = nil
        }
        guard let minted = try? mintAuthenticationToken(mint, baseURL: baseURL) else { return .failure(.invalidIDToken) }
        limited.refreshed += 1
        return .success(minted)
    }

    /// Why the uninstall endpoint refuses an `id_token`, or the claims it carries when it is one of this
    /// emulator's, for this app, unexpired.
    enum UninstallCheck {
        case accepted(userID: String, tokenID: String)
        case refused(GraphError)
    }

    /// Checks an uninstall's `id_token` for `appID` (``checkIDToken(_:appID:)``).
    func checkUninstall(idToken: String, appID: String) -> UninstallCheck {
        switch checkIDToken(idToken, appID: appID) {
        case .refused(let error): return .refused(error)
        case .accepted(let claims):
            func claim(_ name: String) -> JSONValue? { claims.first { $0.0 == name }?.1 }
            guard let userID = claim("sub")?.stringValue else { return .refused(.invalidIDToken) }
            return .accepted(userID: userID, tokenID: claim("jti")?.stringValue ?? "")
        }
    }

    /// Why Limited Login's endpoints refuse an `id_token` they are sent, or its claims.
    enum IDTokenCheck {
        case accepted(claims: [(String, JSONValue)])
        case refused(GraphError)
    }

    /// Checks an `id_token` sent back to the emulator (uninstall, refresh) for `appID`: signed by a key of this
    /// emulator (in the set or retired), `aud` the app, a `sub`, `exp` not passed on the emulator's clock.
    func checkIDToken(_ idToken: String, appID: String) -> IDTokenCheck {
        let parts = idToken.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]),
            let header = JSONValue.parse(headerBytes)?.objectValue,
            let kid = header.first(where: { $0.0 == "kid" })?.1.stringValue, let key = limited.key(withID: kid),
            let signature = Base64URL.decode(parts[2]),
            key.key.publicKey.isValidRS256Signature(signature, for: Array((parts[0] + "." + parts[1]).utf8)),
            let payload = Base64URL.decode(parts[1]).flatMap(JSONValue.parse)?.objectValue
        else { return .refused(.invalidIDToken) }
        func claim(_ name: String) -> JSONValue? { payload.first { $0.0 == name }?.1 }
        guard claim("aud")?.stringValue == appID, claim("sub")?.stringValue?.isEmpty == false else {
            return .refused(.invalidIDToken)
        }
        guard let exp = claim("exp")?.intValue, exp > now else { return .refused(.expiredIDToken) }
        return .accepted(claims: payload)
    }
}
