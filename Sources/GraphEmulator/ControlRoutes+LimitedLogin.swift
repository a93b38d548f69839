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
            return (201, Self.json(try emulator.mintDemoAuthenticationToken(user: user, nonce: nonce)))
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
                "kid", "alg", "signer", "raw_payload",
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
        return Self.json(try emulator.mintAuthenticationToken(request))
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
            ("expires_at", .int(minted.expiresAt)),
            ("claims", minted.claims.isEmpty ? .null : JSONValue.parse(Array(minted.claims.utf8)) ?? .null),
        ])
    }
}
