import Crypto

/// The control routes of Limited Login (under `/__emulator/limited/`; README.md lists them).
extension ControlRoutes {
    /// Routes `segments` below `limited`; nil when none matches.
    func limitedRoute(_ method: String, _ segments: [String], query: [(String, String)], body: [UInt8]) throws
        -> (Int, JSONValue)?
    {
        switch (method, segments) {
        case ("POST", ["tokens"]): return (201, try mintToken(body))
        case ("POST", ["demo-token"]):
            let user = query.first { $0.0 == "user" }?.1 ?? "alice"
            guard let nonce = query.first(where: { $0.0 == "nonce" })?.1, !nonce.isEmpty else {
                throw ControlError(400, "invalid_request", "Give the nonce: ?nonce=... (from POST /v1/login-nonces).")
            }
            let jkt = query.first { $0.0 == "jkt" }?.1
            return (
                201, Self.json(try emulator.mintDemoAuthenticationToken(user: user, nonce: nonce, deviceKeyThumbprint: jkt))
            )
        case ("POST", ["refresh"]): return (201, try refreshToken(body))
        case ("GET", ["keys"]): return (200, keyState())
        case ("PUT", ["keys"]):
            let fields = try ControlBody(body, allowed: ["max_age"])
            if fields.has("max_age") {
                let maxAge = try fields.int("max_age")
                if let maxAge, !(0...31_536_000).contains(maxAge) {
                    throw ControlError(400, "invalid_request", "Field max_age must be from 0 to 31536000, or null.")
                }
                emulator.keySetMaxAge = maxAge.map { Int($0) }
            }
            return (200, keyState())
        case ("POST", ["keys", "rotate"]):
            let fields = try ControlBody(body, allowed: ["keep_previous"])
            try emulator.rotateSigningKey(keepPrevious: fields.bool("keep_previous") ?? false)
            return (200, keyState())
        case ("GET", ["uninstalls"]):
            return (
                200,
                .object([
                    (
                        "uninstalls",
                        .array(
                            emulator.limitedUninstalls.map {
                                .object([
                                    ("app_id", .string($0.appID)), ("user_id", .string($0.userID)),
                                    ("jti", .string($0.tokenID)), ("at", .int($0.at)),
                                ])
                            })
                    )
                ])
            )
        default:
            return nil
        }
    }

    func mintToken(_ bytes: [UInt8]) throws -> JSONValue {
        let body = try ControlBody(
            bytes,
            allowed: [
                "app_id", "user_id", "nonce", "granted", "expires_in", "iss", "aud", "iat", "picture_expires_in", "omit",
                "kid", "alg", "signer", "raw_payload", "jkt",
            ])
        var request = AuthenticationTokenRequest(
            appID: try body.requiredString("app_id"), userID: try body.requiredString("user_id"),
            nonce: try body.requiredString("nonce"))
        if let granted = try body.strings("granted") { request.granted = granted }
        if let expiresIn = try body.int("expires_in") { request.expiresIn = expiresIn }
        if let issuer = try body.string("iss") { request.issuer = issuer }
        request.audience = try body.string("aud")
        request.issuedAt = try body.int("iat")
        request.pictureExpiresIn = try body.int("picture_expires_in")
        request.omittedClaims = try body.strings("omit") ?? []
        if body.has("kid") {
            request.keyID = try body.string("kid").map { .value($0) } ?? .omitted
        }
        if let algorithm = try body.string("alg") { request.algorithm = algorithm }
        if let signer = try body.string("signer") {
            guard let chosen = AuthenticationTokenRequest.Signer(rawValue: signer) else {
                throw ControlError(400, "invalid_request", "Field signer must be current or unlisted.")
            }
            request.signer = chosen
        }
        request.rawPayload = try body.string("raw_payload")
        request.deviceKeyThumbprint = try body.string("jkt")
        return Self.json(try emulator.mintAuthenticationToken(request))
    }

    /// `POST /__emulator/limited/refresh`: the direct refresh without its `DPoP` header, with a knob. Body
    /// `{"id_token_hint", "app_id"?, "jkt"?}`: `app_id` defaults to the hint's `aud`; `jkt` absent keeps the hint's
    /// binding, a string re-binds to that key, null leaves the new token unbound.
    func refreshToken(_ bytes: [UInt8]) throws -> JSONValue {
        let body = try ControlBody(bytes, allowed: ["id_token_hint", "app_id", "jkt"])
        let hint = try body.requiredString("id_token_hint")
        guard let appID = try body.string("app_id") ?? Self.audience(of: hint) else {
            throw ControlError(400, "invalid_request", "Give app_id, or a hint whose aud names the app.")
        }
        var request = LimitedRefreshRequest(hint: hint, appID: appID)
        if body.has("jkt") { request.binding = try body.string("jkt").map { .rebind($0) } ?? .unbound }
        do {
            return Self.json(try emulator.refreshAuthenticationToken(request))
        } catch let error as EmulatorError {
            throw ControlError(400, "refresh_refused", error.message)
        }
    }

    /// The `aud` of a token, read without checking anything (the refresh checks it).
    static func audience(of token: String) -> String? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(String(parts[1])).flatMap(JSONValue.parse)?.objectValue
        else { return nil }
        return payload.first { $0.0 == "aud" }?.1.stringValue
    }

    func keyState() -> JSONValue {
        .object([
            ("keys", .strings(emulator.signingKeyIDs)),
            ("max_age", emulator.keySetMaxAge.map { .int(Int64($0)) } ?? .null),
        ])
    }

    static func json(_ minted: MintedAuthenticationToken) -> JSONValue {
        .object([
            ("authentication_token", .string(minted.token)), ("kid", .string(minted.keyID)),
            ("expires_at", .int(minted.expiresAt)), ("issued_at", .int(minted.issuedAt)),
            ("claims", minted.claims.isEmpty ? .null : JSONValue.parse(Array(minted.claims.utf8)) ?? .null),
        ])
    }
}
